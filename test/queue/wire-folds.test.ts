import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { rows } from '../../src/db/handle.js';
import {
  HeartbeatMismatchError,
  type Item,
  LeaseLostError,
  NO_HEARTBEAT,
  type WireWrite,
  type WorkKind,
  wireFolds,
  wireWritesMany,
} from '../../src/queue/index.js';
import { useTestDb } from '../helpers/db.js';
import {
  claimHolders,
  enqueueClaimItems,
  loseLeases,
  readWork,
  seedPollItems,
  setupSession,
  wireWork,
} from '../helpers/factories.js';
import { capture, genericPlan } from '../helpers/plans.js';

describe('the work API folds on real PostgreSQL connections', () => {
  const t = useTestDb('pg');

  it('64 workers acking, heartbeating and stopping at once are each answered as alone, in fewer statements than calls', async () => {
    const { environmentId, ids } = await seedPollItems(t.db, 64);
    const folds = wireFolds(t.db);
    const acked = await Promise.all(ids.map((workId) => folds.ack({ environmentId, workId })));
    expect(acked.map((w) => [w.id, w.state])).toEqual(ids.map((id) => [id, 'starting']));

    const first = await Promise.all(
      ids.map((workId) => folds.heartbeat({ environmentId, workId, expected: NO_HEARTBEAT, ttlSeconds: 30 })),
    );
    expect(first.every((h) => h.state === 'active' && h.leaseExtended)).toBe(true);

    // Every fourth worker echoes a heartbeat it was never given: only those fail, each with its own state.
    const beats = await Promise.allSettled(
      ids.map((workId, i) =>
        folds.heartbeat({
          environmentId,
          workId,
          expected: i % 4 === 0 ? '2026-01-01T00:00:00Z' : first[i]!.lastHeartbeat,
          ttlSeconds: 45,
        }),
      ),
    );
    for (const [i, b] of beats.entries()) {
      if (i % 4 === 0) {
        expect(b.status).toBe('rejected');
        const err = (b as PromiseRejectedResult).reason as HeartbeatMismatchError;
        expect(err).toBeInstanceOf(HeartbeatMismatchError);
        expect(err.current).toEqual({ lastHeartbeat: first[i]!.lastHeartbeat, state: 'active' });
      } else {
        expect(b.status).toBe('fulfilled');
        const row = await readWork(t.db, ids[i]!);
        expect(row!.lastHeartbeat).toBe(
          (b as PromiseFulfilledResult<{ lastHeartbeat: string }>).value.lastHeartbeat,
        );
      }
    }

    const stopped = await Promise.all(
      ids.map((workId) => folds.stop({ environmentId, workId, force: true })),
    );
    expect(stopped.every(({ work }) => work.state === 'stopped' && work.leaseExpiresAt === null)).toBe(true);

    expect(folds.writes.calls).toBe(64 * 4);
    expect(folds.writes.statements).toBeLessThan(folds.writes.calls);
  });

  it('of twenty first heartbeats of one item racing, exactly one makes it active, as twenty alone would', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'starting');
    const folds = wireFolds(t.db);
    const racing = await Promise.allSettled(
      Array.from({ length: 20 }, () =>
        folds.heartbeat({
          environmentId: target.environmentId,
          workId: id,
          expected: NO_HEARTBEAT,
          ttlSeconds: 30,
        }),
      ),
    );
    expect(racing.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of racing.filter((r) => r.status === 'rejected')) {
      expect((r as PromiseRejectedResult).reason).toBeInstanceOf(HeartbeatMismatchError);
    }
    expect((await readWork(t.db, id))!.state).toBe('active');
  });

  it('a call the database refuses fails alone: the calls that shared its statement are answered', async () => {
    const { environmentId, ids } = await seedPollItems(t.db, 5);
    const folds = wireFolds(t.db);
    await Promise.all(ids.map((workId) => folds.ack({ environmentId, workId })));
    const alone = folds.writes.alone;
    // A lease no interval can hold: the statement carrying it fails as a whole.
    const calls = ids.map((workId, i) => ({
      environmentId,
      workId,
      expected: NO_HEARTBEAT,
      ttlSeconds: i === 2 ? 1e300 : 30,
    }));
    const settled = await Promise.allSettled(calls.map((c) => folds.heartbeat(c)));
    expect(settled.map((s) => s.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
    ]);
    expect(folds.writes.alone - alone).toBeGreaterThanOrEqual(3);
    const states = await Promise.all(ids.map(async (id) => (await readWork(t.db, id))!.state));
    expect(states).toEqual(['active', 'active', 'starting', 'active', 'active']);
  });

  it('the batched statement reaches its rows by id under a generic plan made from stale statistics', async () => {
    const { environmentId, ids } = await seedPollItems(t.db, 2_000);
    await t.db.execute(sql`ANALYZE work_items`);
    const some = ids.slice(0, 9);
    const writes: WireWrite[] = some.map((workId, i) =>
      i % 3 === 0
        ? { op: 'ack', environmentId, workId }
        : i % 3 === 1
          ? { op: 'heartbeat', environmentId, workId, expected: '2026-12-01T00:00:00Z', ttlSeconds: 30 }
          : { op: 'stop', environmentId, workId, force: false },
    );
    for (const statement of [await capture((db) => wireWritesMany(db, writes))]) {
      const plan = await genericPlan(t.pool!, statement);
      expect(plan).not.toMatch(/Seq Scan on work_items/);
      // Each of the three updates reaches its rows through the primary key.
      expect(plan.match(/Index Scan using work_items_pkey on work_items w(_\d)?\s/g)).toHaveLength(3);
    }
  });
});

describe('the platform lane folds on real PostgreSQL connections', () => {
  const t = useTestDb('pg');
  const MINUTE = 60_000;

  it('24 claims of two kinds at once hand out each available item once, oldest first, the rest find none, in fewer statements than claims', async () => {
    const turns = await enqueueClaimItems(t.db, 10, 'model_turn');
    const webs = await enqueueClaimItems(t.db, 5, 'web_exec');
    const folds = wireFolds(t.db);
    const kinds = Array.from({ length: 24 }, (_, i): WorkKind => (i % 2 === 0 ? 'model_turn' : 'web_exec'));
    const got = await Promise.all(kinds.map((kind) => folds.claim({ kind, ttlMs: MINUTE })));
    const handed = (kind: string) =>
      got.filter((item, i): item is Item => item !== null && kinds[i] === kind).map((item) => item.id);
    for (const [i, item] of got.entries()) if (item) expect(item.kind).toBe(kinds[i]);
    expect(handed('model_turn').sort()).toEqual([...turns].sort());
    expect(handed('web_exec').sort()).toEqual([...webs].sort());
    expect(got.filter((item) => item === null)).toHaveLength(24 - 15);
    expect(folds.claims.statements).toBeLessThan(folds.claims.calls);
    const [twice] = await rows<{ n: number }>(
      t.db,
      sql`SELECT count(*)::int AS n FROM work_items WHERE claims <> 1 OR state <> 'active'`,
    );
    expect(twice!.n).toBe(0);
  });

  it('24 completions at once finish their own items; a lost lease fails only its own with LeaseLostError', async () => {
    await enqueueClaimItems(t.db, 28, 'model_turn');
    const held = await claimHolders(t.db, 'model_turn', 24);
    await loseLeases(
      t.db,
      held.filter((_, i) => i % 6 === 1),
      'model_turn',
    );
    const folds = wireFolds(t.db);
    const settled = await Promise.allSettled(held.map((h) => folds.complete(h)));
    for (const [i, s] of settled.entries()) {
      const row = (await readWork(t.db, held[i]!.id))!;
      if (i % 6 === 1) {
        expect((s as PromiseRejectedResult).reason).toBeInstanceOf(LeaseLostError);
        expect(row.state).toBe('active');
      } else {
        expect(s.status).toBe('fulfilled');
        expect(row.state).toBe('stopped');
      }
    }
    expect(folds.completions.calls).toBe(24);
    expect(folds.completions.statements).toBeLessThan(24);
  });
});
