import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { maybeRow, rows, type SqlHandle } from '../../src/db/handle.js';
import { ts } from '../../src/db/time.js';
import { archiveEnvironment } from '../../src/environments/archive.js';
import { deleteEnvironment } from '../../src/environments/delete.js';
import { runOnce } from '../../src/housekeeping/index.js';
import {
  enqueue,
  pruneSamples,
  readSamples,
  recordPoll,
  sampleQueues,
  stats,
} from '../../src/queue/index.js';
import type { Timestamp } from '../../src/queue/types.js';
import { useTestDb } from '../helpers/db.js';
import {
  agePoll,
  createEnvironment,
  createSession,
  insertWork,
  lapseLease,
  setupSession,
  wireWork,
} from '../helpers/factories.js';

/** Moves samples `minutes` into the past, as if they had been taken that long ago. */
async function backdateSamples(db: SqlHandle, minutes: number, where = sql`true`): Promise<void> {
  await db.execute(
    sql`UPDATE queue_samples SET minute = minute - ${minutes}::int * interval '1 minute' WHERE ${where}`,
  );
}

/** Samples stored for the environment (every minute, no window). */
async function sampleCount(db: SqlHandle, environmentId: string): Promise<number> {
  const row = await maybeRow<{ n: number }>(
    db,
    sql`SELECT count(*)::int AS n FROM queue_samples WHERE environment_id = ${environmentId}`,
  );
  return row!.n;
}

/** The current minute less `minutes`, rendered as the samples render it. */
async function minuteAgo(db: SqlHandle, minutes: number): Promise<Timestamp> {
  const [row] = await rows<{ m: Timestamp }>(
    db,
    sql`SELECT ${sql.raw(ts(`(date_trunc('minute', now()) - ${minutes} * interval '1 minute')`))} AS m`,
  );
  return row!.m;
}

describe.each(['pg', 'pglite'] as const)('queue samples (%s)', (driver) => {
  const t = useTestDb(driver);

  it('a sample records depth, pending, oldest and workers polling exactly as stats reports them', async () => {
    const wire = await setupSession(t.db);
    const env = wire.environmentId;
    // Each item has its own session (one live item per session and kind). Reserved items are
    // made while they are the only ones a poll can take.
    const session = async () => ({ environmentId: env, sessionId: await createSession(t.db, env) });
    await wireWork(t.db, wire, 'starting'); // acked: left the queue
    await wireWork(t.db, await session(), 'reserved'); // pending
    const lapsed = await wireWork(t.db, await session(), 'reserved');
    await lapseLease(t.db, lapsed.id); // reservation lapsed: back in depth
    await wireWork(t.db, await session(), 'queued');
    await wireWork(t.db, await session(), 'queued');
    await insertWork(t.db, wire, { kind: 'model_turn' }); // claim lane
    for (const w of ['a', 'b', 'old']) await recordPoll(t.db, env, w);
    await agePoll(t.db, env, 'old', 31_000);
    // A cloud environment: stats reports zeros for it whatever its worker_polls hold.
    const cloud = await setupSession(t.db, 'cloud');
    await enqueue(t.db, { ...cloud, kind: 'tool_exec' });
    await recordPoll(t.db, cloud.environmentId, 'stray');

    expect(await sampleQueues(t.db)).toBe(2);
    const [sample] = await readSamples(t.db, env, 60);
    const now = await stats(t.db, env);
    expect(now).toMatchObject({
      depth: 3,
      pending: 1,
      workersPolling: 2,
      oldestQueuedAt: expect.any(String),
    });
    expect(sample).toEqual({ ...now, claimQueued: 1, minute: expect.stringMatching(/T\d\d:\d\d:00Z$/) });
    const [cloudSample] = await readSamples(t.db, cloud.environmentId, 60);
    const cloudNow = await stats(t.db, cloud.environmentId);
    expect(cloudNow).toEqual({ depth: 0, pending: 0, workersPolling: 0, oldestQueuedAt: null });
    expect(cloudSample).toMatchObject({ ...cloudNow, claimQueued: 1 });
  });

  it('claim_queued counts only the environment’s queued claim-lane items', async () => {
    const target = await setupSession(t.db);
    const other = await setupSession(t.db, 'cloud');
    const session = async (environmentId: string) => ({
      environmentId,
      sessionId: await createSession(t.db, environmentId),
    });
    await insertWork(t.db, target, { kind: 'model_turn' });
    await insertWork(t.db, target, { kind: 'web_exec' });
    await insertWork(t.db, await session(target.environmentId), { kind: 'model_turn', state: 'active' });
    await insertWork(t.db, target, { kind: 'model_turn', state: 'stopped', count: 2 });
    await insertWork(t.db, await session(target.environmentId), { kind: 'tool_exec' }); // poll lane
    for (let i = 0; i < 3; i++) await insertWork(t.db, await session(other.environmentId), {});
    await sampleQueues(t.db);
    expect(await readSamples(t.db, target.environmentId, 60)).toMatchObject([{ claimQueued: 2, depth: 1 }]);
    expect(await readSamples(t.db, other.environmentId, 60)).toMatchObject([{ claimQueued: 3, depth: 0 }]);
  });

  it('archived environments are not sampled', async () => {
    const live = await setupSession(t.db);
    const archived = await setupSession(t.db);
    await insertWork(t.db, archived, {});
    await archiveEnvironment(t.db, archived.environmentId);
    expect(await sampleQueues(t.db)).toBe(1);
    expect(await sampleCount(t.db, live.environmentId)).toBe(1);
    expect(await sampleCount(t.db, archived.environmentId)).toBe(0);
  });

  it('a second sample in the same minute overwrites the first instead of adding a row', async () => {
    const a = await setupSession(t.db);
    const b = await setupSession(t.db);
    // One transaction, so now() and hence the minute are the same for both samples.
    const samples = await t.db.transaction(async (tx) => {
      expect(await sampleQueues(tx)).toBe(2);
      await insertWork(tx, a, { count: 1 });
      await insertWork(tx, { ...b, sessionId: await createSession(tx, b.environmentId) }, {});
      await insertWork(tx, b, {});
      expect(await sampleQueues(tx)).toBe(2);
      return [await readSamples(tx, a.environmentId, 60), await readSamples(tx, b.environmentId, 60)];
    });
    expect(samples).toMatchObject([[{ depth: 1 }], [{ depth: 2 }]]);
    expect(await sampleCount(t.db, a.environmentId)).toBe(1);
    expect(await sampleCount(t.db, b.environmentId)).toBe(1);
  });

  it('pruning deletes samples older than the 65-minute retention in every environment and keeps the rest', async () => {
    const a = await createEnvironment(t.db);
    const b = await createEnvironment(t.db, 'cloud');
    // One transaction, so now() is fixed and the minute arithmetic is exact: a sample 66
    // minutes before the current minute is past the retention, one 64 minutes before is not.
    await t.db.transaction(async (tx) => {
      await sampleQueues(tx);
      await backdateSamples(tx, 66);
      await sampleQueues(tx);
      await backdateSamples(tx, 64, sql`minute = date_trunc('minute', now())`);
      await sampleQueues(tx);
      expect(await pruneSamples(tx)).toBe(2);
      for (const env of [a, b]) {
        expect((await readSamples(tx, env, 120)).map((s) => s.minute)).toEqual([
          await minuteAgo(tx, 64),
          await minuteAgo(tx, 0),
        ]);
      }
      // Pruning again at the same now() finds nothing left to delete. (Outside the transaction a
      // new minute may begin, and then the 64-minute sample is legitimately past the retention.)
      expect(await pruneSamples(tx)).toBe(0);
    });
  });

  it('readSamples returns only the environment’s samples within the window, oldest first', async () => {
    const a = await createEnvironment(t.db);
    const b = await setupSession(t.db);
    await insertWork(t.db, b, {});
    const { window, all, other, expected } = await t.db.transaction(async (tx) => {
      for (const minutes of [30, 10, 0]) {
        await sampleQueues(tx);
        if (minutes) await backdateSamples(tx, minutes, sql`minute = date_trunc('minute', now())`);
      }
      return {
        window: await readSamples(tx, a, 20),
        all: await readSamples(tx, a, 60),
        other: await readSamples(tx, b.environmentId, 60),
        expected: [await minuteAgo(tx, 30), await minuteAgo(tx, 10), await minuteAgo(tx, 0)],
      };
    });
    expect(window.map((s) => s.minute)).toEqual(expected.slice(1));
    expect(all.map((s) => s.minute)).toEqual(expected);
    expect(all.every((s) => s.depth === 0)).toBe(true);
    expect(other.map((s) => s.depth)).toEqual([1, 1, 1]);
    expect(await readSamples(t.db, 'env_missing', 60)).toEqual([]);
  });

  it('deleting an environment deletes its samples and no other environment’s', async () => {
    const gone = await createEnvironment(t.db);
    const kept = await createEnvironment(t.db);
    await sampleQueues(t.db);
    expect(await deleteEnvironment(t.db, gone)).toBe('deleted');
    expect(await sampleCount(t.db, gone)).toBe(0);
    expect(await sampleCount(t.db, kept)).toBe(1);
  });

  it('runOnce samples every live environment and prunes expired samples, and returns both counts', async () => {
    const a = await createEnvironment(t.db);
    const b = await createEnvironment(t.db, 'cloud');
    const archived = await createEnvironment(t.db);
    expect(await sampleQueues(t.db)).toBe(3);
    await backdateSamples(t.db, 70);
    // Archiving stops the sampling; the environment's expired samples are pruned all the same.
    await archiveEnvironment(t.db, archived);
    expect(await runOnce({ db: t.db })).toEqual({
      finalized: 0,
      reaped: 0,
      sampled: 2,
      pruned: 3,
      deletedWorkItems: 0,
      deletedSessions: 0,
      deletedEvents: 0,
      deletedPlatformSessions: 0,
      purgedJournals: 0,
      vacuumed: 0,
    });
    for (const env of [a, b]) expect(await sampleCount(t.db, env)).toBe(1);
    expect(await sampleCount(t.db, archived)).toBe(0);
  });
});
