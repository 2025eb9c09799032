import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { rows } from '../../src/db/handle.js';
import {
  claim,
  claimMany,
  completeThenClaim,
  completeThenClaimMany,
  LeaseLostError,
  wireFolds,
} from '../../src/queue/index.js';
import type { Item, WorkKind } from '../../src/queue/types.js';
import { useTestDb } from '../helpers/db.js';
import {
  backdateLease,
  claimHolders,
  enqueueClaimItems,
  loseLeases,
  readWork,
  seedClaimBacklog,
} from '../helpers/factories.js';
import { capture, genericPlan } from '../helpers/plans.js';

const MINUTE = 60_000;

describe.each(['pg', 'pglite'] as const)('completeThenClaimMany (%s)', (driver) => {
  const t = useTestDb(driver);

  /** `n` items of `kind`, the first `holders` of them claimed; the ids in enqueue order. */
  const lane = async (kind: WorkKind, n: number, holders: number) => {
    const ids = await enqueueClaimItems(t.db, n, kind);
    return { ids, held: await claimHolders(t.db, kind, holders) };
  };
  const activeCount = async (kind: WorkKind) =>
    (
      await rows<{ n: number }>(
        t.db,
        sql`SELECT count(*)::int AS n FROM work_items WHERE kind = ${kind} AND state = 'active'`,
      )
    )[0]!.n;

  it('completes every held item and leases what as many steps one after another would, in the same order', async () => {
    const alone = await lane('model_turn', 7, 3);
    const batched = await lane('web_exec', 7, 3);
    const one: number[] = [];
    for (const h of alone.held) {
      const next = await completeThenClaim(t.db, h, 'model_turn', MINUTE);
      one.push(alone.ids.indexOf(next!.id));
    }
    const { completed, next } = await completeThenClaimMany(t.db, batched.held, 'web_exec', MINUTE);
    expect([...completed].sort()).toEqual(batched.held.map((h) => h.id).sort());
    expect(next.map((item) => batched.ids.indexOf(item.id))).toEqual(one);
    expect(one).toEqual([3, 4, 5]);
    for (const h of batched.held) expect((await readWork(t.db, h.id))!.state).toBe('stopped');
    for (const item of next) {
      expect(item).toMatchObject({ kind: 'web_exec', reclaimed: false, claims: 1 });
      expect((await readWork(t.db, item.id))!).toMatchObject({ state: 'active', lease: item.lease });
    }
  });

  it('a holder whose lease was lost is neither completed nor given a lease: one lease per completion made', async () => {
    const { ids, held } = await lane('model_turn', 6, 3);
    const stale = held[1]!;
    await backdateLease(t.db, stale, 2 * MINUTE);
    const usurper = (await claim(t.db, 'model_turn', MINUTE))!;
    expect(usurper.id).toBe(stale.id);
    const { completed, next } = await completeThenClaimMany(t.db, held, 'model_turn', MINUTE);
    expect([...completed].sort()).toEqual([held[0]!.id, held[2]!.id].sort());
    expect(next.map((item) => ids.indexOf(item.id))).toEqual([3, 4]);
    expect((await readWork(t.db, stale.id))!).toMatchObject({ state: 'active', lease: usurper.lease });
    expect((await readWork(t.db, ids[5]!))!).toMatchObject({ state: 'queued', claims: 0 });
    // The usurper and the two new leases.
    expect(await activeCount('model_turn')).toBe(3);
  });

  it('with fewer items available than completions, every completion stands and the lane runs out', async () => {
    const { ids, held } = await lane('model_turn', 4, 3);
    const { completed, next } = await completeThenClaimMany(t.db, held, 'model_turn', MINUTE);
    expect(completed).toHaveLength(3);
    expect(next.map((item) => item.id)).toEqual([ids[3]]);
    expect(await activeCount('model_turn')).toBe(1);
  });

  it('never hands a held item back, even when its own lease had lapsed, and reclaims only others', async () => {
    const { held } = await lane('model_turn', 3, 3);
    for (const h of held.slice(0, 2)) await backdateLease(t.db, h, 2 * MINUTE);
    // The third holder's lease lapsed too, but it is not in the batch: that one is reclaimed.
    await backdateLease(t.db, held[2]!, 2 * MINUTE);
    const { completed, next } = await completeThenClaimMany(t.db, held.slice(0, 2), 'model_turn', MINUTE);
    expect(completed).toHaveLength(2);
    expect(next.map((item) => [item.id, item.reclaimed, item.claims])).toEqual([[held[2]!.id, true, 2]]);
  });

  it('claims only the asked kind', async () => {
    await enqueueClaimItems(t.db, 2, 'mcp_exec');
    const { held } = await lane('model_turn', 2, 2);
    const { completed, next } = await completeThenClaimMany(t.db, held, 'mcp_exec', MINUTE);
    expect(completed).toHaveLength(2);
    expect(next.map((item) => item.kind)).toEqual(['mcp_exec', 'mcp_exec']);
  });

  it('a proof the queue never issued completes nothing and earns no lease', async () => {
    const { ids, held } = await lane('model_turn', 4, 2);
    const forged: Item = { ...held[1]!, lease: 'yesterday' };
    const { completed, next } = await completeThenClaimMany(t.db, [held[0]!, forged], 'model_turn', MINUTE);
    expect(completed).toEqual([held[0]!.id]);
    expect(next.map((item) => item.id)).toEqual([ids[2]]);
    expect((await readWork(t.db, held[1]!.id))!).toMatchObject({ state: 'active', lease: held[1]!.lease });
  });
});

describe('folded platform steps on real PostgreSQL connections', () => {
  const t = useTestDb('pg');

  it('32 claimers stepping at once each finish their own item and get a distinct next one, in fewer statements than steps; a lost lease fails only its own step', async () => {
    const ids = await enqueueClaimItems(t.db, 80, 'model_turn');
    const held = await claimHolders(t.db, 'model_turn', 32);
    // Every eighth holder lost its lease to another claimer.
    const lost = held.filter((_, i) => i % 8 === 3);
    await loseLeases(t.db, lost, 'model_turn');
    const folds = wireFolds(t.db);
    const steps = await Promise.allSettled(
      held.map((h) => folds.completeThenClaim({ held: h, kind: 'model_turn', ttlMs: MINUTE })),
    );
    const handed: string[] = [];
    for (const [i, s] of steps.entries()) {
      if (i % 8 === 3) {
        expect(s.status).toBe('rejected');
        expect((s as PromiseRejectedResult).reason).toBeInstanceOf(LeaseLostError);
        expect((await readWork(t.db, held[i]!.id))!.state).toBe('active');
      } else {
        expect(s.status).toBe('fulfilled');
        const next = (s as PromiseFulfilledResult<Item | null>).value!;
        expect(next.kind).toBe('model_turn');
        handed.push(next.id);
        expect((await readWork(t.db, held[i]!.id))!.state).toBe('stopped');
      }
    }
    // 28 completions, 28 distinct next items, none of them one of the 32 held; nothing else leased.
    expect(new Set(handed).size).toBe(28);
    expect(handed.filter((id) => held.some((h) => h.id === id))).toEqual([]);
    expect(handed.every((id) => ids.indexOf(id) >= 32)).toBe(true);
    const [active] = await rows<{ n: number }>(
      t.db,
      sql`SELECT count(*)::int AS n FROM work_items WHERE state = 'active'`,
    );
    expect(active!.n).toBe(28 + lost.length);
    expect(folds.steps.calls).toBe(32);
    expect(folds.steps.statements).toBeLessThan(32);
  });

  it('steps of different kinds sharing a fold each lease their own kind', async () => {
    await enqueueClaimItems(t.db, 6, 'model_turn');
    await enqueueClaimItems(t.db, 6, 'web_exec');
    const held: Array<[Item, WorkKind]> = [];
    for (let i = 0; i < 3; i++) held.push([(await claim(t.db, 'model_turn', MINUTE))!, 'web_exec']);
    for (let i = 0; i < 3; i++) held.push([(await claim(t.db, 'web_exec', MINUTE))!, 'model_turn']);
    const folds = wireFolds(t.db);
    const next = await Promise.all(
      held.map(([h, kind]) => folds.completeThenClaim({ held: h, kind, ttlMs: MINUTE })),
    );
    expect(next.map((item) => item!.kind)).toEqual(held.map(([, kind]) => kind));
    expect(new Set(next.map((item) => item!.id)).size).toBe(6);
  });

  it('reaches its rows by index under a generic plan made from stale statistics', async () => {
    await seedClaimBacklog(t.db, 2_000, 'model_turn');
    await t.db.execute(sql`ANALYZE work_items`); // statistics of a backlog with nothing active
    const held = await claimMany(t.db, 'model_turn', 4, MINUTE);
    const plan = await genericPlan(
      t.pool!,
      await capture((db) => completeThenClaimMany(db, held, 'model_turn', MINUTE)),
    );
    expect(plan).not.toMatch(/Seq Scan on work_items/);
    // The completions and the hand-outs each reach their rows through the primary key.
    expect(plan.match(/Index Scan using work_items_pkey on work_items w(_\d)?\s/g)).toHaveLength(2);
  });
});
