import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { rows } from '../../src/db/handle.js';
import {
  CLAIM_MANY_MAX,
  claim,
  claimMany,
  complete,
  completeAndClaim,
  completeMany,
  extend,
  LeaseLostError,
} from '../../src/queue/index.js';
import type { Item } from '../../src/queue/types.js';
import { useTestDb } from '../helpers/db.js';
import {
  backdateLease,
  enqueueClaimItems,
  readWork,
  seedClaimBacklog,
  seedClaimItems,
} from '../helpers/factories.js';
import { capture, genericPlan, workRowsFetched } from '../helpers/plans.js';

const MINUTE = 60_000;

describe.each(['pg', 'pglite'] as const)('claimMany and completeMany (%s)', (driver) => {
  const t = useTestDb(driver);

  const queued = (n: number, kind: 'model_turn' | 'web_exec' = 'model_turn') =>
    enqueueClaimItems(t.db, n, kind);

  it('takes at most n items, oldest first, each active under its own proof', async () => {
    const ids = await queued(5);
    const batch = await claimMany(t.db, 'model_turn', 3, MINUTE);
    expect(batch.map((i) => i.id)).toEqual(ids.slice(0, 3));
    for (const item of batch) {
      expect(item).toMatchObject({ kind: 'model_turn', reclaimed: false, claims: 1 });
      expect((await readWork(t.db, item.id))!).toMatchObject({ state: 'active', lease: item.lease });
    }
    const rest = await claimMany(t.db, 'model_turn', 10, MINUTE);
    expect(rest.map((i) => i.id)).toEqual(ids.slice(3));
    expect(await claimMany(t.db, 'model_turn', 10, MINUTE)).toEqual([]);
  });

  it('each item of a batch can be extended and completed alone', async () => {
    await queued(2);
    const [a, b] = await claimMany(t.db, 'model_turn', 2, MINUTE);
    await extend(t.db, a!, 2 * MINUTE);
    await complete(t.db, a!);
    await complete(t.db, b!);
    expect((await readWork(t.db, a!.id))!.state).toBe('stopped');
    expect((await readWork(t.db, b!.id))!.state).toBe('stopped');
  });

  it('reclaims lapsed leases like claim does, and only of the asked kind', async () => {
    await queued(1, 'web_exec');
    const [first] = await queued(1);
    const held = (await claim(t.db, 'model_turn', MINUTE))!;
    await backdateLease(t.db, held, 2 * MINUTE);
    const [again] = await claimMany(t.db, 'model_turn', 5, MINUTE);
    expect(again).toMatchObject({ id: first, reclaimed: true, claims: 2 });
    await expect(complete(t.db, held)).rejects.toThrow(LeaseLostError);
  });

  it('takes lapsed leases and queued items in one batch, oldest first, stepping past none in flight', async () => {
    const ids = await seedClaimItems(t.db, 600, 'web_exec');
    // The 500 oldest held; of them the 2nd and the 400th lapse. Then 100 queued.
    expect(await claimMany(t.db, 'web_exec', 500, MINUTE)).toHaveLength(500);
    await t.db.execute(
      sql`UPDATE work_items SET lease_expires_at = now() - interval '1 minute' WHERE id IN (${ids[1]}, ${ids[399]})`,
    );
    const { fetched, result } = await workRowsFetched(t.db, (tx) => claimMany(tx, 'web_exec', 4, MINUTE));
    expect(result.map((i) => [i.id, i.reclaimed])).toEqual([
      [ids[1], true],
      [ids[399], true],
      [ids[500], false],
      [ids[501], false],
    ]);
    expect(fetched).toBeLessThanOrEqual(4 + 4 + 4);
  });

  it('completeMany finishes the held items and reports the ones whose lease was lost', async () => {
    await queued(4);
    const batch = await claimMany(t.db, 'model_turn', 4, MINUTE);
    const [stale] = batch;
    await backdateLease(t.db, stale!, 2 * MINUTE);
    const usurper = (await claim(t.db, 'model_turn', MINUTE))!;
    expect(usurper.id).toBe(stale!.id);
    const forged: Item = { ...batch[1]!, lease: 'not a timestamp' };
    const result = await completeMany(t.db, [stale!, forged, batch[2]!, batch[3]!]);
    expect(result.completed.sort()).toEqual([batch[2]!.id, batch[3]!.id].sort());
    expect(result.lost.sort()).toEqual([stale!.id, forged.id].sort());
    // The usurper's lease and the forged item's lease are untouched.
    expect((await readWork(t.db, stale!.id))!).toMatchObject({ state: 'active', lease: usurper.lease });
    expect((await readWork(t.db, batch[1]!.id))!).toMatchObject({ state: 'active', lease: batch[1]!.lease });
    expect((await readWork(t.db, batch[2]!.id))!.state).toBe('stopped');
    expect(await completeMany(t.db, [])).toEqual({ completed: [], lost: [] });
  });

  it('refuses a batch size outside 1..CLAIM_MANY_MAX', async () => {
    expect(() => claimMany(t.db, 'model_turn', 0, MINUTE)).toThrow(RangeError);
    expect(() => claimMany(t.db, 'model_turn', CLAIM_MANY_MAX + 1, MINUTE)).toThrow(RangeError);
    expect(() => claimMany(t.db, 'model_turn', 1.5, MINUTE)).toThrow(RangeError);
  });
});

describe('claimMany under contention on real PostgreSQL connections', () => {
  const t = useTestDb('pg', { poolSize: 16 });

  it('8 batch claimers drain 3,000 items with completeMany: every item claimed and completed once', async () => {
    const total = 3_000;
    await seedClaimBacklog(t.db, total, 'mcp_exec');
    const claimed = new Map<string, number>();
    let completed = 0;
    let lost = 0;
    const worker = async () => {
      for (;;) {
        const batch = await claimMany(t.db, 'mcp_exec', 37, MINUTE);
        if (batch.length === 0) return;
        for (const item of batch) claimed.set(item.id, (claimed.get(item.id) ?? 0) + 1);
        const result = await completeMany(t.db, batch);
        completed += result.completed.length;
        lost += result.lost.length;
      }
    };
    await Promise.all(Array.from({ length: 8 }, () => worker()));
    expect(lost).toBe(0);
    expect(claimed.size).toBe(total);
    expect([...claimed.values()].every((n) => n === 1)).toBe(true);
    expect(completed).toBe(total);
    const [left] = await rows<{ n: number }>(
      t.db,
      sql`SELECT count(*)::int AS n FROM work_items WHERE state <> 'stopped' OR claims <> 1`,
    );
    expect(left!.n).toBe(0);
  });

  it('every hand-out and completion reaches its rows by id under a generic plan made from stale statistics', async () => {
    await seedClaimBacklog(t.db, 2_000, 'model_turn');
    await t.db.execute(sql`ANALYZE work_items`); // statistics of a backlog with nothing active
    const held = await claimMany(t.db, 'model_turn', 100, MINUTE);
    for (const statement of [
      await capture((db) => claimMany(db, 'model_turn', 100, MINUTE)),
      await capture((db) => completeMany(db, held)),
      await capture((db) => claim(db, 'model_turn', MINUTE)),
      await capture((db) => completeAndClaim(db, held[0]!, 'model_turn', MINUTE), [{ completed: true }]),
    ]) {
      const plan = await genericPlan(t.pool!, statement);
      expect(plan).not.toMatch(/Seq Scan on work_items/);
      expect(plan).toMatch(/Index Scan using work_items_pkey on work_items w\s/);
    }
  });
});
