import { getEventListeners } from 'node:events';
import { type SQL, sql } from 'drizzle-orm';
import pg from 'pg';
import { describe, expect, it, vi } from 'vitest';
import type { Clock } from '../../src/clock.js';
import { maybeRow, type SqlHandle } from '../../src/db/handle.js';
import {
  claim,
  enqueue,
  type Item,
  keepLease,
  LeaseLostError,
  WorkStalledError,
} from '../../src/queue/index.js';
import { type TestDb, useTestDb } from '../helpers/db.js';
import { readWork, setupSession } from '../helpers/factories.js';
import { flushMacrotasks, ManualClock } from '../helpers/manual-clock.js';

const TTL = 30_000;

/**
 * The keeper's database handle in the manual-clock tests: records the clock's time at each
 * call, and lets the clock wait for the calls in flight before it fires the next timer.
 */
class TrackedDb implements SqlHandle {
  readonly calls: { at: number; timersBefore: number }[] = [];
  /** Set while a test holds the row lock: a renewal then hangs, and `idle` must not wait for it. */
  blocked = false;
  private readonly inflight = new Set<Promise<unknown>>();

  constructor(
    private readonly inner: SqlHandle,
    private readonly clock: ManualClock,
  ) {}

  execute(query: SQL): Promise<unknown> {
    this.calls.push({ at: this.clock.now(), timersBefore: this.clock.scheduled.length });
    const call = Promise.resolve(this.inner.execute(query));
    this.inflight.add(call);
    const done = () => void this.inflight.delete(call);
    call.then(done, done);
    return call;
  }

  /** The clock's time at each call. */
  get times(): number[] {
    return this.calls.map((c) => c.at);
  }

  /** The timeout the keeper set for the renewal it started with call `i` (set right after the call). */
  budgetOf(i: number): number | undefined {
    const call = this.calls[i];
    return call && this.clock.scheduled[call.timersBefore]?.ms;
  }

  async idle(): Promise<void> {
    for (;;) {
      await flushMacrotasks();
      if (this.blocked || this.inflight.size === 0) return;
      await Promise.allSettled([...this.inflight]);
    }
  }
}

/** A claimed model_turn of a fresh cloud session. */
async function claimed(db: SqlHandle, ttlMs = TTL): Promise<Item> {
  const { environmentId, sessionId } = await setupSession(db, 'cloud');
  await enqueue(db, { environmentId, sessionId, kind: 'model_turn' });
  const item = await claim(db, 'model_turn', ttlMs);
  if (!item) throw new Error('nothing claimed');
  return item;
}

/** A claimed item, a manual clock at 0 and the tracked handle the keeper renews through. */
async function fixture(t: TestDb) {
  const item = await claimed(t.db);
  const clock = new ManualClock();
  const db = new TrackedDb(t.db, clock);
  clock.idle = () => db.idle();
  return { item, claimLease: item.lease, clock, db };
}

/** The row's lease as stored, rendered in SQL (the same rendering as the holder's proof). */
async function rowLease(db: SqlHandle, id: string): Promise<string | null> {
  return (await readWork(db, id))!.lease;
}

/** Whether timestamp `a` is strictly later than `b`, compared by the database to the microsecond. */
async function isLater(db: SqlHandle, a: string, b: string): Promise<boolean> {
  const row = await maybeRow<{ later: boolean }>(
    db,
    sql`SELECT ${a}::timestamptz > ${b}::timestamptz AS later`,
  );
  return row!.later;
}

async function moveLease(db: SqlHandle, id: string): Promise<void> {
  await db.execute(
    sql`UPDATE work_items SET lease_expires_at = lease_expires_at + interval '1 second' WHERE id = ${id}`,
  );
}

describe.each(['pg', 'pglite'] as const)('keepLease on a manual clock (%s)', (driver) => {
  const t = useTestDb(driver);

  it.each([
    { ttl: TTL, stall: 0, tick: 10_000 },
    { ttl: TTL, stall: 4_000, tick: 4_000 },
    { ttl: TTL, stall: 10_000, tick: 10_000 },
    { ttl: TTL, stall: 60_000, tick: 10_000 },
  ])(
    'ticks every min(ttl/3, stall): ttl $ttl, stall $stall → every $tick ms',
    async ({ ttl, stall, tick }) => {
      const { item, clock, db } = await fixture(t);
      const keeper = keepLease(db, item, { ttlMs: ttl, stallMs: stall, clock });
      for (let k = 1; k <= 3; k++) {
        await clock.advance(tick - 1);
        expect(db.calls).toHaveLength(k - 1);
        keeper.progress();
        await clock.advance(1);
        expect(db.times).toEqual(Array.from({ length: k }, (_, i) => (i + 1) * tick));
      }
      expect(keeper.signal.aborted).toBe(false);
      expect(await keeper.close()).toBeNull();
    },
  );

  it('never ticks before its instant, even when the timers fire early (as Node’s can by ~1 ms)', async () => {
    const { item, clock, db } = await fixture(t);
    const early: Clock = {
      now: () => clock.now(),
      setTimeout: (fn, ms) => clock.setTimeout(fn, ms > 1 ? ms - 1 : ms),
      clearTimeout: (handle) => clock.clearTimeout(handle),
    };
    const keeper = keepLease(db, item, { ttlMs: TTL, clock: early });
    await clock.advance(10_000);
    await clock.advance(10_000);
    expect(db.times).toEqual([10_000, 20_000]);
    expect(await keeper.close()).toBeNull();
  });

  it('a holder silent past its stall budget is given up at that tick without renewing: the row keeps the claim’s lease exactly', async () => {
    const { item, claimLease, clock, db } = await fixture(t);
    const keeper = keepLease(db, item, { ttlMs: TTL, stallMs: 400, clock });
    await clock.jump(401); // the first tick (due at 400) runs 1 ms late, as real timers do
    expect(db.calls).toHaveLength(0);
    expect(keeper.signal.aborted).toBe(true);
    expect(keeper.signal.reason).toBeInstanceOf(WorkStalledError);
    await clock.advance(10 * TTL);
    expect(db.calls).toHaveLength(0);
    expect(clock.pendingTimers).toBe(0);
    expect(await keeper.close()).toBe(keeper.signal.reason);
    expect(item.lease).toBe(claimLease);
    expect(await rowLease(t.db, item.id)).toBe(claimLease);
  });

  it('the stall check precedes every renewal: once the holder is silent for more than the budget the lease is never renewed again', async () => {
    const { item, claimLease, clock, db } = await fixture(t);
    const keeper = keepLease(db, item, { ttlMs: TTL, stallMs: 400, clock });
    await clock.advance(400); // silent for exactly the budget: not more, so it renews
    expect(db.times).toEqual([400]);
    const renewed = item.lease;
    expect(await isLater(t.db, renewed, claimLease)).toBe(true);
    await clock.advance(400); // silent for 800 ms > 400 ms
    expect(db.calls).toHaveLength(1);
    expect(keeper.signal.reason).toBeInstanceOf(WorkStalledError);
    await clock.advance(10 * TTL);
    expect(db.calls).toHaveLength(1);
    expect(await keeper.close()).toBe(keeper.signal.reason);
    expect(item.lease).toBe(renewed);
    expect(await rowLease(t.db, item.id)).toBe(renewed);
  });

  it('progress() keeps a keeper with a stall budget renewing; without it the keeper stalls at the first tick more than the budget after the last progress', async () => {
    const { item, clock, db } = await fixture(t);
    const keeper = keepLease(db, item, { ttlMs: TTL, stallMs: 1_000, clock });
    for (let i = 0; i < 20; i++) {
      await clock.advance(500);
      keeper.progress();
    }
    expect(db.times).toEqual(Array.from({ length: 10 }, (_, i) => (i + 1) * 1_000));
    expect(keeper.signal.aborted).toBe(false);
    expect(await rowLease(t.db, item.id)).toBe(item.lease);

    await clock.advance(1_000); // 1 000 ms since the last progress: still within the budget
    expect(db.calls).toHaveLength(11);
    expect(keeper.signal.aborted).toBe(false);
    await clock.advance(1_000); // 2 000 ms since the last progress
    expect(db.calls).toHaveLength(11);
    expect(keeper.signal.reason).toBeInstanceOf(WorkStalledError);
    expect(await keeper.close()).toBe(keeper.signal.reason);
  });

  it('a lease moved by someone else fails the next renewal with LeaseLostError, aborts the signal with it and stops renewing', async () => {
    const { item, clock, db } = await fixture(t);
    const keeper = keepLease(db, item, { ttlMs: TTL, clock });
    await clock.advance(10_000);
    expect(keeper.signal.aborted).toBe(false);
    await moveLease(t.db, item.id);
    await clock.advance(10_000);
    expect(db.calls).toHaveLength(2);
    expect(keeper.signal.aborted).toBe(true);
    expect(keeper.signal.reason).toBeInstanceOf(LeaseLostError);
    await clock.advance(10 * TTL);
    expect(db.calls).toHaveLength(2);
    expect(await keeper.close()).toBe(keeper.signal.reason);
  });

  it('a lease shorter than any timer can wait is reported lost without a database call', async () => {
    const { item, clock } = await fixture(t);
    let calls = 0;
    const noDb: SqlHandle = {
      execute: () => {
        calls++;
        throw new Error('the keeper must not call the database');
      },
    };
    const keeper = keepLease(noDb, item, { ttlMs: 1e-6, clock });
    await clock.jump(1); // the first tick (due at ttl/3) runs at the earliest a timer can
    expect(keeper.signal.reason).toBeInstanceOf(LeaseLostError);
    const failure = await keeper.close();
    expect(failure).toBeInstanceOf(LeaseLostError);
    expect(failure).toBe(keeper.signal.reason);
    expect(calls).toBe(0);
  });

  it('a parent signal aborting aborts the keeper’s signal with its reason and stops renewals; close() then returns null', async () => {
    const { item, clock, db } = await fixture(t);
    const parent = new AbortController();
    const keeper = keepLease(db, item, { ttlMs: TTL, clock, signal: parent.signal });
    await clock.advance(10_000);
    expect(db.calls).toHaveLength(1);
    const reason = new Error('turn interrupted');
    parent.abort(reason);
    expect(keeper.signal.aborted).toBe(true);
    expect(keeper.signal.reason).toBe(reason);
    await clock.advance(10 * TTL);
    expect(db.calls).toHaveLength(1);
    expect(await keeper.close()).toBeNull();
    expect(await rowLease(t.db, item.id)).toBe(item.lease);
  });

  it('a parent signal aborted before the keeper starts leaves the keeper aborted from the start, never renewing', async () => {
    const { item, claimLease, clock, db } = await fixture(t);
    const parent = new AbortController();
    const reason = new Error('already cancelled');
    parent.abort(reason);
    const keeper = keepLease(db, item, { ttlMs: TTL, clock, signal: parent.signal });
    expect(keeper.signal.reason).toBe(reason);
    await clock.advance(10 * TTL);
    expect(db.calls).toHaveLength(0);
    expect(await keeper.close()).toBeNull();
    expect(await rowLease(t.db, item.id)).toBe(claimLease);
  });

  it('a keeper that failed or was closed leaves no listener on its parent signal', async () => {
    const { item, clock, db } = await fixture(t);
    const other = await claimed(t.db);
    const parent = new AbortController();
    const healthy = keepLease(db, item, { ttlMs: TTL, clock, signal: parent.signal });
    const failing = keepLease(db, other, { ttlMs: TTL, clock, signal: parent.signal });
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(2);
    await moveLease(t.db, other.id);
    await clock.advance(10_000);
    expect(failing.signal.reason).toBeInstanceOf(LeaseLostError);
    expect(healthy.signal.aborted).toBe(false);
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(1);
    expect(await healthy.close()).toBeNull();
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0);
    expect(await failing.close()).toBeInstanceOf(LeaseLostError);
  });

  it('close() on a healthy keeper returns null, aborts the signal, leaves no timer, and item.lease equals the row’s lease exactly', async () => {
    const { item, claimLease, clock, db } = await fixture(t);
    const keeper = keepLease(db, item, { ttlMs: TTL, clock });
    await clock.advance(20_000);
    expect(db.calls).toHaveLength(2);
    expect(keeper.signal.aborted).toBe(false);
    expect(await keeper.close()).toBeNull();
    expect(keeper.signal.aborted).toBe(true);
    expect(clock.pendingTimers).toBe(0);
    const stored = await rowLease(t.db, item.id);
    expect(item.lease).toBe(stored);
    expect(await isLater(t.db, item.lease, claimLease)).toBe(true);
    await clock.advance(10 * TTL);
    expect(db.calls).toHaveLength(2);
    expect(await rowLease(t.db, item.id)).toBe(stored);
  });
});

/** Holds the item's row lock from its own connection, in an open transaction, until released. */
async function lockRow(t: TestDb, id: string) {
  const client = new pg.Client({ connectionString: t.url! });
  await client.connect();
  await client.query('BEGIN');
  await client.query('SELECT 1 FROM work_items WHERE id = $1 FOR UPDATE', [id]);
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const pid = rows[0]!.pid;
  let open = true;
  return {
    /** Resolves once a statement of another backend is waiting on this lock. */
    async waitForWaiter(): Promise<void> {
      await vi.waitFor(
        async () => {
          const row = await maybeRow<{ n: number }>(
            t.db,
            sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE ${pid}::int = ANY(pg_blocking_pids(pid))`,
          );
          if (row!.n < 1) throw new Error('no statement waits on the row lock yet');
        },
        { timeout: 5_000, interval: 5 },
      );
    },
    async release(): Promise<void> {
      if (!open) return;
      open = false;
      await client.query('COMMIT');
    },
    async end(): Promise<void> {
      await this.release();
      await client.end();
    },
  };
}

describe('keepLease against a renewal blocked by a row lock (pg)', () => {
  const t = useTestDb('pg');

  it('a renewal slower than one interval is followed at once by the next attempt, budgeted with what the lease has left; ticks stay on the grid and the keeper keeps the lease', async () => {
    const { item, clock, db } = await fixture(t);
    const keeper = keepLease(db, item, { ttlMs: TTL, clock });
    const lock = await lockRow(t, item.id);
    try {
      db.blocked = true;
      await clock.advance(10_000);
      expect(db.times).toEqual([10_000]);
      expect(db.budgetOf(0)).toBe(20_000); // ttl − 10 s since the claim
      await lock.waitForWaiter();
      await clock.advance(15_000); // past the 20 s grid tick, the renewal still waiting
      expect(db.calls).toHaveLength(1);
      expect(keeper.signal.aborted).toBe(false);

      await lock.release();
      db.blocked = false;
      await clock.settle();
      // Finished at 25 s: the tick buffered at 20 s runs at once, with the fresh lease's budget.
      expect(db.times).toEqual([10_000, 25_000]);
      expect(db.budgetOf(1)).toBe(TTL);
      // Then the grid resumes: 30 s, not 25 s + 10 s.
      await clock.advance(4_999);
      expect(db.calls).toHaveLength(2);
      await clock.advance(1);
      expect(db.times).toEqual([10_000, 25_000, 30_000]);

      expect(keeper.signal.aborted).toBe(false);
      expect(await keeper.close()).toBeNull();
      expect(await rowLease(t.db, item.id)).toBe(item.lease);
    } finally {
      await lock.end();
    }
  });

  it('a renewal blocked past what the lease has left fails with LeaseLostError at that instant, and its late commit does not move item.lease', async () => {
    const { item, claimLease, clock, db } = await fixture(t);
    const keeper = keepLease(db, item, { ttlMs: TTL, clock });
    const lock = await lockRow(t, item.id);
    try {
      db.blocked = true;
      await clock.advance(10_000);
      await lock.waitForWaiter();
      await clock.advance(19_999);
      expect(keeper.signal.aborted).toBe(false);
      await clock.advance(1); // ttl since the claim: the lease has nothing left
      expect(keeper.signal.reason).toBeInstanceOf(LeaseLostError);
      expect(await keeper.close()).toBe(keeper.signal.reason);
      expect(db.calls).toHaveLength(1);
      expect(item.lease).toBe(claimLease);

      // The timed-out UPDATE was never cancelled: released, it commits (the known #400
      // limit), but the holder was told its lease is lost and its proof stays put.
      await lock.release();
      db.blocked = false;
      await db.idle();
      expect(item.lease).toBe(claimLease);
      await clock.advance(10 * TTL);
      expect(db.calls).toHaveLength(1);
    } finally {
      await lock.end();
    }
  });

  it('close() waits for a renewal in flight, so item.lease afterwards equals the row’s lease', async () => {
    const { item, claimLease, clock, db } = await fixture(t);
    const keeper = keepLease(db, item, { ttlMs: TTL, clock });
    const lock = await lockRow(t, item.id);
    try {
      db.blocked = true;
      await clock.advance(10_000);
      await lock.waitForWaiter();
      let closed = false;
      const closing = keeper.close().finally(() => {
        closed = true;
      });
      await flushMacrotasks(10);
      expect(closed).toBe(false);
      await lock.release();
      db.blocked = false;
      expect(await closing).toBeNull();
      expect(keeper.signal.aborted).toBe(true);
      const stored = await rowLease(t.db, item.id);
      expect(item.lease).toBe(stored);
      expect(await isLater(t.db, item.lease, claimLease)).toBe(true);
      expect(clock.pendingTimers).toBe(0);
    } finally {
      await lock.end();
    }
  });
});

describe('keepLease on the system clock (pg)', () => {
  const t = useTestDb('pg');

  it('renews a 300 ms lease within 400 ms and close() returns null with item.lease equal to the row’s', async () => {
    const item = await claimed(t.db, 300);
    const claimLease = item.lease;
    const keeper = keepLease(t.db, item, { ttlMs: 300, stallMs: 0 });
    try {
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(keeper.signal.aborted).toBe(false);
    } finally {
      expect(await keeper.close()).toBeNull();
    }
    const stored = await rowLease(t.db, item.id);
    expect(item.lease).toBe(stored);
    expect(await isLater(t.db, stored!, claimLease)).toBe(true);
  });

  it('gives up a holder silent past a 100 ms stall budget within a second, never renewing the 30 s claim', async () => {
    const item = await claimed(t.db, TTL);
    const claimLease = item.lease;
    const started = performance.now();
    const keeper = keepLease(t.db, item, { ttlMs: TTL, stallMs: 100 });
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('not cancelled within a second')), 1_000);
        keeper.signal.addEventListener('abort', () => resolve(clearTimeout(timer)), { once: true });
      });
      expect(performance.now() - started).toBeLessThan(1_000);
      expect(keeper.signal.reason).toBeInstanceOf(WorkStalledError);
    } finally {
      expect(await keeper.close()).toBeInstanceOf(WorkStalledError);
    }
    expect(item.lease).toBe(claimLease);
    expect(await rowLease(t.db, item.id)).toBe(claimLease);
  });

  it('reports a 1 ns lease lost without a database call', async () => {
    const item = await claimed(t.db);
    let calls = 0;
    const noDb: SqlHandle = {
      execute: () => {
        calls++;
        throw new Error('the keeper must not call the database');
      },
    };
    const keeper = keepLease(noDb, item, { ttlMs: 1e-6 });
    await new Promise((resolve) => keeper.signal.addEventListener('abort', resolve, { once: true }));
    expect(await keeper.close()).toBeInstanceOf(LeaseLostError);
    expect(calls).toBe(0);
  });
});
