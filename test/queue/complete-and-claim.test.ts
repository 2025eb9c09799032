import { sql } from 'drizzle-orm';
import pg from 'pg';
import { describe, expect, it, vi } from 'vitest';
import { rows } from '../../src/db/handle.js';
import { claim, claimMany, completeAndClaim } from '../../src/queue/index.js';
import type { Item } from '../../src/queue/types.js';
import { useTestDb } from '../helpers/db.js';
import {
  backdateLease,
  enqueueClaimItems,
  readWork,
  seedClaimBacklog,
  seedClaimItems,
} from '../helpers/factories.js';
import { workRowsFetched } from '../helpers/plans.js';

const MINUTE = 60_000;

describe.each(['pg', 'pglite'] as const)('completeAndClaim (%s)', (driver) => {
  const t = useTestDb(driver);

  const queued = (n: number, kind: 'model_turn' | 'web_exec' = 'model_turn') =>
    enqueueClaimItems(t.db, n, kind);

  it('completes the held item and leases the next oldest of the kind', async () => {
    const ids = await queued(3);
    const first = (await claim(t.db, 'model_turn', MINUTE))!;
    const { completed, next } = await completeAndClaim(t.db, first, 'model_turn', MINUTE);
    expect(completed).toBe(true);
    expect(next).toMatchObject({ id: ids[1], kind: 'model_turn', reclaimed: false, claims: 1 });
    expect((await readWork(t.db, first.id))!.state).toBe('stopped');
    expect((await readWork(t.db, next!.id))!).toMatchObject({ state: 'active', lease: next!.lease });
  });

  it('an empty lane completes the item and hands out nothing', async () => {
    await queued(1);
    const only = (await claim(t.db, 'model_turn', MINUTE))!;
    expect(await completeAndClaim(t.db, only, 'model_turn', MINUTE)).toEqual({ completed: true, next: null });
    expect((await readWork(t.db, only.id))!.state).toBe('stopped');
  });

  it('a lost lease completes nothing and leaves the new holder alone, but still hands out the next item', async () => {
    const ids = await queued(2);
    const stale = (await claim(t.db, 'model_turn', MINUTE))!;
    await backdateLease(t.db, stale, 2 * MINUTE);
    const usurper = (await claim(t.db, 'model_turn', MINUTE))!;
    expect(usurper.id).toBe(stale.id);
    const { completed, next } = await completeAndClaim(t.db, stale, 'model_turn', MINUTE);
    expect(completed).toBe(false);
    expect(next!.id).toBe(ids[1]);
    expect((await readWork(t.db, stale.id))!).toMatchObject({ state: 'active', lease: usurper.lease });
  });

  it('a proof it never issued completes nothing', async () => {
    await queued(1);
    const held = (await claim(t.db, 'model_turn', MINUTE))!;
    const forged: Item = { ...held, lease: 'yesterday' };
    expect(await completeAndClaim(t.db, forged, 'model_turn', MINUTE)).toEqual({
      completed: false,
      next: null,
    });
    expect((await readWork(t.db, held.id))!).toMatchObject({ state: 'active', lease: held.lease });
  });

  it('never hands the completed item back, even when its own lease had lapsed', async () => {
    await queued(1);
    const held = (await claim(t.db, 'model_turn', MINUTE))!;
    await backdateLease(t.db, held, 2 * MINUTE);
    expect(await completeAndClaim(t.db, held, 'model_turn', MINUTE)).toEqual({ completed: true, next: null });
  });

  it('steps past no item in flight: with 300 held items older than the queue, a step reads a handful of rows', async () => {
    const ids = await seedClaimItems(t.db, 305, 'web_exec');
    const held = await claimMany(t.db, 'web_exec', 300, MINUTE);
    const { fetched, result } = await workRowsFetched(t.db, (tx) =>
      completeAndClaim(tx, held[0]!, 'web_exec', MINUTE),
    );
    expect(result).toMatchObject({ completed: true, next: { id: ids[300] } });
    // The held item by its key, the next by the queued index: a few rows, not 300.
    expect(fetched).toBeLessThanOrEqual(6);
  });

  it('claims only the asked kind', async () => {
    await queued(1, 'web_exec');
    await queued(1);
    const held = (await claim(t.db, 'model_turn', MINUTE))!;
    const { next } = await completeAndClaim(t.db, held, 'mcp_exec', MINUTE);
    expect(next).toBeNull();
  });
});

describe('completeAndClaim under contention on real PostgreSQL connections', () => {
  const t = useTestDb('pg', { poolSize: 16 });

  it('8 worker loops drain 3,000 items: every item handed out once and completed once', async () => {
    const total = 3_000;
    await seedClaimBacklog(t.db, total, 'web_exec');
    const handedOut = new Map<string, number>();
    let completed = 0;
    let lost = 0;
    const worker = async () => {
      let item = await claim(t.db, 'web_exec', MINUTE);
      while (item) {
        handedOut.set(item.id, (handedOut.get(item.id) ?? 0) + 1);
        const step = await completeAndClaim(t.db, item, 'web_exec', MINUTE);
        if (step.completed) completed++;
        else lost++;
        item = step.next;
      }
    };
    await Promise.all(Array.from({ length: 8 }, () => worker()));
    expect(lost).toBe(0);
    expect(handedOut.size).toBe(total);
    expect([...handedOut.values()].every((n) => n === 1)).toBe(true);
    expect(completed).toBe(total);
    const [left] = await rows<{ n: number }>(
      t.db,
      sql`SELECT count(*)::int AS n FROM work_items WHERE state <> 'stopped' OR claims <> 1`,
    );
    expect(left!.n).toBe(0);
  });
});

describe('completeAndClaim waiting for its held row (pg)', () => {
  const t = useTestDb('pg');

  // A claimer whose snapshot predates this holder's claim can still lock the held row: it
  // fails the recheck, but the lock stays until its transaction ends. Completing first means a
  // step that waits there holds no other row, so two such steps can never wait on each other.
  it('holds no other row while it waits for its held item: it completes before it claims', async () => {
    const ids = await enqueueClaimItems(t.db, 3, 'model_turn');
    const held = (await claim(t.db, 'model_turn', MINUTE))!;
    const other = new pg.Client({ connectionString: t.url! });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query('SELECT 1 FROM work_items WHERE id = $1 FOR UPDATE', [held.id]);
      const { rows: pidRows } = await other.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const step = completeAndClaim(t.db, held, 'model_turn', MINUTE);
      await vi.waitFor(
        async () => {
          const [row] = await rows<{ n: number }>(
            t.db,
            sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE ${pidRows[0]!.pid}::int = ANY(pg_blocking_pids(pid))`,
          );
          if (row!.n < 1) throw new Error('the step does not wait on the held row yet');
        },
        { timeout: 5_000, interval: 5 },
      );
      // Every queued item is still free to lock: the waiting step has locked none of them.
      for (const id of ids.slice(1)) {
        await other.query('SAVEPOINT probe');
        await expect(
          other.query('SELECT 1 FROM work_items WHERE id = $1 FOR UPDATE NOWAIT', [id]),
        ).resolves.toMatchObject({ rowCount: 1 });
        await other.query('ROLLBACK TO SAVEPOINT probe');
      }
      await other.query('COMMIT');
      const { completed, next } = await step;
      expect(completed).toBe(true);
      expect(next?.id).toBe(ids[1]);
    } finally {
      await other.end();
    }
  });
});
