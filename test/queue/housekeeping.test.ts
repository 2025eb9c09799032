import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { SqlHandle } from '../../src/db/handle.js';
import { runOnce } from '../../src/housekeeping/index.js';
import { finalizeAbandoned, poll, readSamples, reapPolls, recordPoll } from '../../src/queue/index.js';
import { countingDb } from '../helpers/counting-db.js';
import { useTestDb } from '../helpers/db.js';
import {
  agePoll,
  countWork,
  createEnvironment,
  createSession,
  insertWork,
  lapseLease,
  pollers,
  readWork,
  setupSession,
  wireWork,
} from '../helpers/factories.js';

/** `count` worker_polls rows in the environment, each last seen `ageMs` ago. */
async function insertPolls(
  db: SqlHandle,
  environmentId: string,
  count: number,
  ageMs: number,
): Promise<void> {
  await db.execute(
    sql`INSERT INTO worker_polls (environment_id, worker_id, last_polled_at)
        SELECT ${environmentId}, 'w' || g, now() - ${ageMs}::double precision * interval '1 millisecond'
          FROM generate_series(1, ${count}::int) AS g`,
  );
}

async function pollCount(db: SqlHandle): Promise<number> {
  const result = (await db.execute(sql`SELECT count(*)::int AS n FROM worker_polls`)) as {
    rows: { n: number }[];
  };
  return result.rows[0]!.n;
}

describe.each(['pg', 'pglite'] as const)('housekeeping (%s)', (driver) => {
  const t = useTestDb(driver);

  it('finalizeAbandoned settles lapsed and lease-less stopping items in every environment', async () => {
    const a = await setupSession(t.db);
    const b = await setupSession(t.db);
    const lapsed = await insertWork(t.db, a, { state: 'stopping', leaseInMs: -1_000, count: 3 });
    const leaseless = await insertWork(t.db, b, { state: 'stopping', count: 2 });
    expect(await finalizeAbandoned(t.db)).toBe(5);
    for (const id of [...lapsed, ...leaseless]) {
      expect(await readWork(t.db, id)).toMatchObject({
        state: 'stopped',
        lease: null,
        stoppedAt: expect.any(String),
      });
    }
    expect(await finalizeAbandoned(t.db)).toBe(0);
  });

  it('finalizeAbandoned leaves live wind-downs and every other state alone', async () => {
    const target = await setupSession(t.db);
    const draining = await wireWork(t.db, target, 'stopping');
    for (const state of ['queued', 'starting', 'active'] as const) {
      const sessionId = await createSession(t.db, target.environmentId);
      await insertWork(t.db, { ...target, sessionId }, { state, leaseInMs: -1_000 });
    }
    const [stopped] = await insertWork(t.db, target, { state: 'stopped' });
    const before = await readWork(t.db, stopped!);
    expect(await finalizeAbandoned(t.db)).toBe(0);
    expect((await readWork(t.db, draining.id))!.state).toBe('stopping');
    expect(await countWork(t.db, 'queued')).toBe(1);
    expect(await countWork(t.db, 'starting')).toBe(1);
    expect(await countWork(t.db, 'active')).toBe(1);
    expect(await readWork(t.db, stopped!)).toEqual(before);
    // Once the draining worker's lease lapses, its wind-down is abandoned.
    await lapseLease(t.db, draining.id);
    expect(await finalizeAbandoned(t.db)).toBe(1);
    expect((await readWork(t.db, draining.id))!.state).toBe('stopped');
  });

  it('finalizeAbandoned works in bounded batches: at most batch × maxBatches per run', async () => {
    const a = await setupSession(t.db);
    const b = await setupSession(t.db);
    await insertWork(t.db, a, { state: 'stopping', leaseInMs: -1_000, count: 70 });
    await insertWork(t.db, b, { state: 'stopping', leaseInMs: -1_000, count: 60 });
    expect(await finalizeAbandoned(t.db, { batch: 50, maxBatches: 2 })).toBe(100);
    expect(await countWork(t.db, 'stopping')).toBe(30);
    expect(await finalizeAbandoned(t.db, { batch: 50, maxBatches: 2 })).toBe(30);
    expect(await countWork(t.db, 'stopping')).toBe(0);
  });

  it('a run stops at the first short batch instead of issuing another statement', async () => {
    const target = await setupSession(t.db);
    await insertWork(t.db, target, { state: 'stopping', leaseInMs: -1_000, count: 60 });
    await insertPolls(t.db, target.environmentId, 3, 60_000);
    const counted = countingDb(t.db);
    expect(await finalizeAbandoned(counted.db, { batch: 50 })).toBe(60);
    expect(counted.statements).toBe(2);
    counted.statements = 0;
    expect(await reapPolls(counted.db, { batch: 5 })).toBe(3);
    expect(counted.statements).toBe(1);
  });

  it('finalizeAbandoned drains a backlog larger than one batch in a single default run', async () => {
    const target = await setupSession(t.db);
    await insertWork(t.db, target, { state: 'stopping', leaseInMs: -1_000, count: 120 });
    expect(await finalizeAbandoned(t.db)).toBe(120);
    expect(await finalizeAbandoned(t.db, { batch: 7 })).toBe(0);
    await insertWork(t.db, target, { state: 'stopping', count: 20 });
    expect(await finalizeAbandoned(t.db, { batch: 7 })).toBe(20);
  });

  it('finalizeAbandoned covers an environment nobody polls; a finalized item is never re-offered', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'stopping');
    await lapseLease(t.db, id);
    expect(await finalizeAbandoned(t.db)).toBe(1);
    expect(await poll(t.db, target.environmentId, 60_000)).toBeNull();
    expect((await readWork(t.db, id))!.state).toBe('stopped');
  });

  it('reapPolls deletes rows older than the 30 s window in every environment and keeps the rest', async () => {
    const a = await createEnvironment(t.db);
    const b = await createEnvironment(t.db);
    for (const w of ['old', 'edge', 'fresh']) {
      await recordPoll(t.db, a, w);
      await recordPoll(t.db, b, w);
    }
    for (const env of [a, b]) {
      await agePoll(t.db, env, 'old', 31_000);
      await agePoll(t.db, env, 'edge', 29_000);
    }
    expect(await reapPolls(t.db)).toBe(2);
    expect(await pollers(t.db, a)).toEqual(['edge', 'fresh']);
    expect(await pollers(t.db, b)).toEqual(['edge', 'fresh']);
    expect(await reapPolls(t.db)).toBe(0);
  });

  it('reapPolls works in bounded batches', async () => {
    const env = await createEnvironment(t.db);
    await insertPolls(t.db, env, 5, 60_000);
    expect(await reapPolls(t.db, { batch: 2, maxBatches: 2 })).toBe(4);
    expect(await pollCount(t.db)).toBe(1);
    expect(await reapPolls(t.db, { batch: 2, maxBatches: 2 })).toBe(1);
    expect(await pollCount(t.db)).toBe(0);
  });

  it('runOnce finalizes, reaps, then samples and prunes, and returns every count', async () => {
    const target = await setupSession(t.db);
    await insertWork(t.db, target, { state: 'stopping', leaseInMs: -1_000, count: 3 });
    // Recorded first: a recordPoll would itself reap the environment's aged rows.
    await recordPoll(t.db, target.environmentId, 'live');
    await insertPolls(t.db, target.environmentId, 4, 60_000);
    // One sample per environment; nothing is old enough to prune yet.
    expect(await runOnce({ db: t.db })).toEqual({
      finalized: 3,
      reaped: 4,
      sampled: 1,
      pruned: 0,
      deletedWorkItems: 0,
      deletedSessions: 0,
      deletedEvents: 0,
      deletedPlatformSessions: 0,
      purgedJournals: 0,
      vacuumed: 0,
    });
    expect(await pollers(t.db, target.environmentId)).toEqual(['live']);
    // The sample is taken after the reap: only the live worker counts.
    expect(await readSamples(t.db, target.environmentId, 60)).toMatchObject([{ workersPolling: 1 }]);
    expect(await runOnce({ db: t.db })).toEqual({
      finalized: 0,
      reaped: 0,
      sampled: 1,
      pruned: 0,
      deletedWorkItems: 0,
      deletedSessions: 0,
      deletedEvents: 0,
      deletedPlatformSessions: 0,
      purgedJournals: 0,
      vacuumed: 0,
    });
  });

  it('runOnce passes its bounds to finalize and reap; sampling is one row per environment', async () => {
    const target = await setupSession(t.db);
    await insertWork(t.db, target, { state: 'stopping', leaseInMs: -1_000, count: 5 });
    await insertPolls(t.db, target.environmentId, 5, 60_000);
    await createEnvironment(t.db, 'cloud');
    expect(await runOnce({ db: t.db }, { batch: 2, maxBatches: 1 })).toEqual({
      finalized: 2,
      reaped: 2,
      sampled: 2,
      pruned: 0,
      deletedWorkItems: 0,
      deletedSessions: 0,
      deletedEvents: 0,
      deletedPlatformSessions: 0,
      purgedJournals: 0,
      vacuumed: 0,
    });
  });
});

describe('housekeeping on real PostgreSQL connections', () => {
  const t = useTestDb('pg', { poolSize: 20 });

  it('overlapping finalizeAbandoned runs never double count: together they finalize every row once', async () => {
    const total = 3 * 150;
    for (let i = 0; i < 3; i++) {
      const target = await setupSession(t.db);
      await insertWork(t.db, target, { state: 'stopping', leaseInMs: -1_000, count: 150 });
    }
    const counts = await Promise.all(
      Array.from({ length: 6 }, () => finalizeAbandoned(t.db, { batch: 10, maxBatches: 1_000 })),
    );
    expect(counts.reduce((a, b) => a + b, 0)).toBe(total);
    expect(await countWork(t.db, 'stopping')).toBe(0);
    expect(await countWork(t.db, 'stopped')).toBe(total);
  });

  it('overlapping reapPolls runs never double count', async () => {
    const env = await createEnvironment(t.db);
    await insertPolls(t.db, env, 300, 60_000);
    const counts = await Promise.all(
      Array.from({ length: 6 }, () => reapPolls(t.db, { batch: 10, maxBatches: 1_000 })),
    );
    expect(counts.reduce((a, b) => a + b, 0)).toBe(300);
    expect(await pollCount(t.db)).toBe(0);
  });
});
