import { describe, expect, it } from 'vitest';
import { RenderedSql } from '../../src/db/fixed-sql.js';
import { renderSql } from '../../src/db/render.js';
import {
  assertLease,
  claim,
  complete,
  enqueue,
  extend,
  type Item,
  LeaseLostError,
  requeue,
} from '../../src/queue/index.js';
import { useTestDb } from '../helpers/db.js';
import { backdateLease, readWork, setupSession } from '../helpers/factories.js';
import { sentQueries } from '../helpers/plans.js';

const MINUTE = 60_000;

describe.each(['pg', 'pglite'] as const)('lease proofs (%s)', (driver) => {
  const t = useTestDb(driver);

  async function claimed(kind: 'model_turn' | 'web_exec' = 'model_turn'): Promise<Item> {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    await enqueue(t.db, { environmentId, sessionId, kind });
    return (await claim(t.db, kind, MINUTE))!;
  }

  it('extend moves the lease forward and hands the holder the new proof', async () => {
    const item = await claimed();
    const before = item.lease;
    const returned = await extend(t.db, item, 10 * MINUTE);
    expect(returned).toBe(item.lease);
    expect(item.lease > before).toBe(true);
    expect((await readWork(t.db, item.id))!.lease).toBe(item.lease);
  });

  it('extend keeps a lapsed lease nobody reclaimed (no wall-clock check)', async () => {
    const item = await claimed();
    await backdateLease(t.db, item, 2 * MINUTE);
    await extend(t.db, item, MINUTE);
    expect(await claim(t.db, 'model_turn', MINUTE)).toBeNull();
  });

  it('extend, complete, requeue and assert all fail with LeaseLostError on a stale proof', async () => {
    const item = await claimed();
    const stale = { ...item };
    await extend(t.db, item, MINUTE);
    await expect(extend(t.db, stale, MINUTE)).rejects.toThrow(LeaseLostError);
    await expect(complete(t.db, stale)).rejects.toThrow(LeaseLostError);
    await expect(requeue(t.db, stale)).rejects.toThrow(LeaseLostError);
    await expect(assertLease(t.db, stale)).rejects.toThrow(LeaseLostError);
    // The stale attempts changed nothing: the current holder's lease is intact.
    expect((await readWork(t.db, item.id))!).toMatchObject({ state: 'active', lease: item.lease });
    await complete(t.db, item);
  });

  it('after complete the item is finished: extend and complete fail, a claim finds nothing', async () => {
    const item = await claimed();
    await complete(t.db, item);
    const row = await readWork(t.db, item.id);
    expect(row).toMatchObject({ state: 'stopped', lease: null });
    expect(row!.stoppedAt).not.toBeNull();
    await expect(extend(t.db, item, MINUTE)).rejects.toThrow(LeaseLostError);
    await expect(complete(t.db, item)).rejects.toThrow(LeaseLostError);
    expect(await claim(t.db, 'model_turn', MINUTE)).toBeNull();
  });

  it('requeue hands the item back under the same id; the next claim is not a reclaim', async () => {
    const item = await claimed();
    await requeue(t.db, item);
    expect(await readWork(t.db, item.id)).toMatchObject({ state: 'queued', lease: null });
    const again = (await claim(t.db, 'model_turn', MINUTE))!;
    expect(again).toMatchObject({ id: item.id, reclaimed: false, claims: 2 });
    await expect(complete(t.db, item)).rejects.toThrow(LeaseLostError);
    await complete(t.db, again);
  });

  it('assert passes with the live proof; after a reclaim the old proof fails and the new one passes', async () => {
    const item = await claimed();
    await assertLease(t.db, item);
    await backdateLease(t.db, item, 2 * MINUTE);
    const successor = (await claim(t.db, 'model_turn', MINUTE))!;
    await expect(assertLease(t.db, item)).rejects.toThrow(LeaseLostError);
    await assertLease(t.db, successor);
  });

  it('complete inside a rolled-back transaction leaves the lease with its holder', async () => {
    const item = await claimed();
    await expect(
      t.db.transaction(async (tx) => {
        await complete(tx, item);
        throw new Error('settlement failed');
      }),
    ).rejects.toThrow('settlement failed');
    expect(await readWork(t.db, item.id)).toMatchObject({ state: 'active', lease: item.lease });
    await t.db.transaction((tx) => complete(tx, item));
    expect((await readWork(t.db, item.id))!.state).toBe('stopped');
  });
});

describe('assert inside a transaction on real PostgreSQL connections', () => {
  const t = useTestDb('pg', { poolSize: 4 });

  it('holds a lapsed item against a concurrent reclaim until the transaction commits', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    await enqueue(t.db, { environmentId, sessionId, kind: 'model_turn' });
    const item = (await claim(t.db, 'model_turn', MINUTE))!;
    await backdateLease(t.db, item, 2 * MINUTE);
    let duringTx: Item | null | undefined;
    await t.db.transaction(async (tx) => {
      await assertLease(tx, item);
      duringTx = await claim(t.db, 'model_turn', MINUTE);
      await complete(tx, item);
    });
    expect(duringTx).toBeNull();
    expect((await readWork(t.db, item.id))!.state).toBe('stopped');
  });

  it('after the asserting transaction commits without settling, the lapsed item is reclaimable', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    await enqueue(t.db, { environmentId, sessionId, kind: 'model_turn' });
    const item = (await claim(t.db, 'model_turn', MINUTE))!;
    await backdateLease(t.db, item, 2 * MINUTE);
    await t.db.transaction(async (tx) => {
      await assertLease(tx, item);
      expect(await claim(t.db, 'model_turn', MINUTE)).toBeNull();
    });
    expect(await claim(t.db, 'model_turn', MINUTE)).toMatchObject({ id: item.id, reclaimed: true });
  });

  it('a holder fenced by a reclaim cannot complete inside its transaction either', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    await enqueue(t.db, { environmentId, sessionId, kind: 'web_exec' });
    const stale = (await claim(t.db, 'web_exec', MINUTE))!;
    await backdateLease(t.db, stale, 2 * MINUTE);
    const current = (await claim(t.db, 'web_exec', MINUTE))!;
    await expect(t.db.transaction((tx) => complete(tx, stale))).rejects.toThrow(LeaseLostError);
    expect(await readWork(t.db, current.id)).toMatchObject({ state: 'active', lease: current.lease });
  });
});

describe('lease statements', () => {
  const held = (id: string, lease: string): Item => ({
    id,
    environmentId: 'env_a',
    sessionId: 'sess_a',
    kind: 'tool_exec',
    lease,
    reclaimed: false,
    claims: 1,
    metadata: {},
    traceContext: null,
  });
  const a = held('work_a', '2026-12-05T01:00:00.123456Z');
  const b = held('work_b', '2026-12-05T03:00:00+02:00');
  const calls = {
    extend: (item: Item) => (db: Parameters<typeof extend>[0]) => extend(db, item, 30_000),
    complete: (item: Item) => (db: Parameters<typeof complete>[0]) => complete(db, item),
    requeue: (item: Item) => (db: Parameters<typeof requeue>[0]) => requeue(db, item),
    assertLease: (item: Item) => (db: Parameters<typeof assertLease>[0]) => assertLease(db, item),
  };

  it.each(Object.keys(calls) as (keyof typeof calls)[])(
    '%s sends one fixed statement (its text rendered once), bound to the item and its proof',
    async (name) => {
      const [first] = await sentQueries(calls[name](a));
      const [second] = await sentQueries(calls[name](b));
      expect(first).toBeInstanceOf(RenderedSql);
      expect(renderSql(second!).sql).toBe(renderSql(first!).sql);
      expect(renderSql(first!).params).toEqual(
        expect.arrayContaining(['work_a', '2026-12-05T01:00:00.123456', 0]),
      );
      expect(renderSql(second!).params).toEqual(
        expect.arrayContaining(['work_b', '2026-12-05T03:00:00', 120]),
      );
    },
  );

  it('complete and requeue hand the item back in statements of their own', async () => {
    const [completed] = await sentQueries(calls.complete(a));
    const [requeued] = await sentQueries(calls.requeue(a));
    expect(renderSql(completed!).params).toContain('stopped');
    expect(renderSql(requeued!).params).toContain('queued');
    expect(renderSql(requeued!).sql).not.toBe(renderSql(completed!).sql);
  });

  it('a lease that names no instant sends nothing: the holder is told its lease is lost', async () => {
    for (const name of Object.keys(calls) as (keyof typeof calls)[]) {
      expect(await sentQueries(calls[name](held('work_a', 'not a time')))).toEqual([]);
      await expect(
        calls[name](held('work_a', 'not a time'))({ execute: async () => ({ rows: [] }) }),
      ).rejects.toThrow(LeaseLostError);
    }
  });
});
