import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { SqlHandle } from '../../src/db/handle.js';
import { type EnvironmentSummary, environmentSummaries } from '../../src/queue/environment-summaries.js';
import { ack, claim, enqueue, poll, recordPoll, stats, stop } from '../../src/queue/index.js';
import { useTestDb } from '../helpers/db.js';
import {
  agePoll,
  compareTimestamps,
  createSession,
  insertWork,
  lapseLease,
  setCreatedAt,
  setupSession,
} from '../helpers/factories.js';

const ZEROS = {
  depth: 0,
  pending: 0,
  oldestQueuedAt: null,
  oldestQueuedMs: null,
  workersPolling: 0,
  claimQueued: 0,
  claimLeased: 0,
};

async function summaryOf(db: SqlHandle, environmentId: string): Promise<EnvironmentSummary> {
  const rows = await environmentSummaries(db, [environmentId]);
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

/** The stats() fields of a summary. */
function statsPart(s: EnvironmentSummary) {
  return {
    depth: s.depth,
    pending: s.pending,
    oldestQueuedAt: s.oldestQueuedAt,
    workersPolling: s.workersPolling,
  };
}

/** Enqueues a tool_exec item in a fresh session of the environment and sets its created_at. */
async function toolAt(db: SqlHandle, environmentId: string, createdAt: string): Promise<string> {
  const sessionId = await createSession(db, environmentId);
  const { work } = await enqueue(db, { environmentId, sessionId, kind: 'tool_exec' });
  await setCreatedAt(db, work.id, createdAt);
  return work.id;
}

describe.each(['pg', 'pglite'] as const)('environmentSummaries (%s)', (driver) => {
  const t = useTestDb(driver);

  it('an empty id list returns no rows', async () => {
    await setupSession(t.db);
    expect(await environmentSummaries(t.db, [])).toEqual([]);
  });

  it('an unknown id yields a row of zeros, stamped with the database clock', async () => {
    const rows = await environmentSummaries(t.db, ['env_missing']);
    expect(rows).toEqual([{ environmentId: 'env_missing', ...ZEROS, at: expect.any(String) }]);
    expect(await compareTimestamps(t.db, rows[0]!.at, new Date(Date.now() - 60_000).toISOString())).toBe(1);
  });

  it('an empty environment yields a row of zeros', async () => {
    const { environmentId } = await setupSession(t.db);
    expect(await summaryOf(t.db, environmentId)).toMatchObject({ environmentId, ...ZEROS });
  });

  it('one row per id given, each its own environment', async () => {
    const a = await setupSession(t.db);
    const b = await setupSession(t.db);
    await enqueue(t.db, { ...a, kind: 'tool_exec' });
    await enqueue(t.db, { ...b, kind: 'model_turn' });
    const rows = await environmentSummaries(t.db, [a.environmentId, 'env_missing', b.environmentId]);
    expect(rows).toHaveLength(3);
    const byId = new Map(rows.map((r) => [r.environmentId, r]));
    expect(byId.get(a.environmentId)).toMatchObject({ depth: 1, claimQueued: 0 });
    expect(byId.get(b.environmentId)).toMatchObject({ depth: 0, claimQueued: 1 });
    expect(byId.get('env_missing')).toMatchObject(ZEROS);
  });

  it('rows come back in the order the ids were given', async () => {
    const ids = [];
    for (let i = 0; i < 6; i++) ids.push((await setupSession(t.db)).environmentId);
    const order = [ids[3]!, 'env_missing', ids[0]!, ids[5]!, ids[1]!, ids[4]!, ids[2]!];
    expect((await environmentSummaries(t.db, order)).map((r) => r.environmentId)).toEqual(order);
  });

  it('depth, pending, oldestQueuedAt and workersPolling equal stats() at every step of a self_hosted queue', async () => {
    const target = await setupSession(t.db, 'self_hosted');
    const env = target.environmentId;
    const same = async (expected: Partial<EnvironmentSummary>) => {
      const summary = await summaryOf(t.db, env);
      expect(statsPart(summary)).toEqual(await stats(t.db, env));
      expect(summary).toMatchObject(expected);
    };
    await same({ depth: 0, pending: 0, oldestQueuedAt: null, workersPolling: 0 });

    const first = await toolAt(t.db, env, '2026-01-01T00:00:01.5Z');
    const second = await toolAt(t.db, env, '2026-01-01T00:00:02.25Z');
    await toolAt(t.db, env, '2026-01-01T00:00:03Z');
    await same({ depth: 3, pending: 0, oldestQueuedAt: '2026-01-01T00:00:01.5Z' });

    // Reserved by poll(): pending, still the oldest queued.
    expect((await poll(t.db, env, 60_000))!.id).toBe(first);
    await same({ depth: 2, pending: 1, oldestQueuedAt: '2026-01-01T00:00:01.5Z' });

    // Acked: leaves the queue.
    await ack(t.db, env, first);
    await same({ depth: 2, pending: 0, oldestQueuedAt: '2026-01-01T00:00:02.25Z' });

    // A reservation lapsed: depth again.
    expect((await poll(t.db, env, 60_000))!.id).toBe(second);
    await same({ depth: 1, pending: 1 });
    await lapseLease(t.db, second);
    await same({ depth: 2, pending: 0 });

    // Stopped items (force stop of the acked one, and a stopped row) count toward nothing.
    await stop(t.db, env, first, true);
    await insertWork(t.db, target, { state: 'stopped', count: 2 });
    await same({ depth: 2, pending: 0, oldestQueuedAt: '2026-01-01T00:00:02.25Z' });

    // Worker polls inside and outside the 30 s window.
    await recordPoll(t.db, env, 'a');
    await recordPoll(t.db, env, 'b');
    await recordPoll(t.db, env, 'c');
    await same({ workersPolling: 3 });
    await agePoll(t.db, env, 'a', 29_000);
    await agePoll(t.db, env, 'b', 31_000);
    await agePoll(t.db, env, 'c', 120_000);
    await same({ workersPolling: 1 });
  });

  it('starting, active and stopping poll-lane items count toward neither depth nor pending, as in stats()', async () => {
    const target = await setupSession(t.db);
    for (const state of ['starting', 'active', 'stopping'] as const) {
      for (const leaseInMs of [-1_000, 60_000]) {
        const sessionId = await createSession(t.db, target.environmentId);
        await insertWork(t.db, { ...target, sessionId }, { state, leaseInMs });
      }
    }
    const summary = await summaryOf(t.db, target.environmentId);
    expect(statsPart(summary)).toEqual(await stats(t.db, target.environmentId));
    expect(summary).toMatchObject(ZEROS);
  });

  it('claimQueued counts queued claim-lane items only', async () => {
    const target = await setupSession(t.db, 'self_hosted');
    const cloud = await setupSession(t.db, 'cloud');
    for (const kind of ['model_turn', 'web_exec', 'mcp_exec', 'outputs_harvest'] as const) {
      await enqueue(t.db, { ...target, kind });
    }
    // Poll-lane queued items and claim-lane items in other states do not count.
    await enqueue(t.db, { ...target, kind: 'tool_exec' });
    await insertWork(t.db, target, { kind: 'model_turn', state: 'stopped', count: 2 });
    const s2 = await createSession(t.db, target.environmentId);
    await insertWork(
      t.db,
      { ...target, sessionId: s2 },
      { kind: 'model_turn', state: 'active', leaseInMs: 60_000 },
    );
    // A cloud environment's tool_exec is on the claim lane.
    await enqueue(t.db, { ...cloud, kind: 'tool_exec' });
    await enqueue(t.db, { ...cloud, kind: 'model_turn' });

    expect(await summaryOf(t.db, target.environmentId)).toMatchObject({
      claimQueued: 4,
      depth: 1,
      claimLeased: 1,
    });
    expect(await summaryOf(t.db, cloud.environmentId)).toMatchObject({
      claimQueued: 2,
      depth: 0,
      pending: 0,
    });
  });

  it('claimLeased counts claim-lane items under a live lease, not a lapsed one', async () => {
    const cloud = await setupSession(t.db, 'cloud');
    const other = await createSession(t.db, cloud.environmentId);
    const { work: a } = await enqueue(t.db, { ...cloud, kind: 'model_turn' });
    const { work: b } = await enqueue(t.db, { ...cloud, sessionId: other, kind: 'model_turn' });
    await setCreatedAt(t.db, a.id, '2026-01-01T00:00:01Z');
    await setCreatedAt(t.db, b.id, '2026-01-01T00:00:02Z');
    expect(await summaryOf(t.db, cloud.environmentId)).toMatchObject({ claimQueued: 2, claimLeased: 0 });

    expect((await claim(t.db, 'model_turn', 60_000))!.id).toBe(a.id);
    expect(await summaryOf(t.db, cloud.environmentId)).toMatchObject({ claimQueued: 1, claimLeased: 1 });
    expect((await claim(t.db, 'model_turn', 60_000))!.id).toBe(b.id);
    expect(await summaryOf(t.db, cloud.environmentId)).toMatchObject({ claimQueued: 0, claimLeased: 2 });

    await lapseLease(t.db, a.id);
    expect(await summaryOf(t.db, cloud.environmentId)).toMatchObject({ claimQueued: 0, claimLeased: 1 });
    // The poll-lane figures never see the claim lane.
    expect(await summaryOf(t.db, cloud.environmentId)).toMatchObject({
      depth: 0,
      pending: 0,
      oldestQueuedAt: null,
    });
  });

  it('poll-lane reservations and leases count toward pending at most, never claimLeased', async () => {
    const target = await setupSession(t.db);
    const { work } = await enqueue(t.db, { ...target, kind: 'tool_exec' });
    await poll(t.db, target.environmentId, 60_000);
    expect(await summaryOf(t.db, target.environmentId)).toMatchObject({ pending: 1, claimLeased: 0 });
    // Acked: starting under a live startup lease, still on the poll lane.
    await ack(t.db, target.environmentId, work.id);
    expect(await summaryOf(t.db, target.environmentId)).toMatchObject({ pending: 0, claimLeased: 0 });
  });

  it('oldestQueuedMs is the age of the oldest queued poll item by the database clock', async () => {
    const target = await setupSession(t.db);
    const older = await toolAt(t.db, target.environmentId, '2026-01-01T00:00:00Z');
    const newer = await toolAt(t.db, target.environmentId, '2026-01-01T00:00:00Z');
    await t.db.execute(
      sql`UPDATE work_items SET created_at = now() - interval '90 seconds' WHERE id = ${older}`,
    );
    await t.db.execute(
      sql`UPDATE work_items SET created_at = now() - interval '10 seconds' WHERE id = ${newer}`,
    );
    // A much older claim-lane item does not count.
    const { work: turn } = await enqueue(t.db, { ...target, kind: 'model_turn' });
    await t.db.execute(
      sql`UPDATE work_items SET created_at = now() - interval '1 hour' WHERE id = ${turn.id}`,
    );

    const summary = await summaryOf(t.db, target.environmentId);
    expect(summary.oldestQueuedMs).toBeGreaterThanOrEqual(85_000);
    expect(summary.oldestQueuedMs).toBeLessThanOrEqual(120_000);
    expect(statsPart(summary)).toEqual(await stats(t.db, target.environmentId));
    // Consistent with the two timestamps the same row reports.
    const gap = Date.parse(summary.at) - Date.parse(summary.oldestQueuedAt!);
    expect(Math.abs(gap - summary.oldestQueuedMs!)).toBeLessThanOrEqual(2);
  });

  it('a cloud environment reports workersPolling 0 even with poll rows, as stats() does', async () => {
    const cloud = await setupSession(t.db, 'cloud');
    await enqueue(t.db, { ...cloud, kind: 'tool_exec' });
    await recordPoll(t.db, cloud.environmentId, 'worker-1');
    await recordPoll(t.db, cloud.environmentId, 'worker-2');
    const summary = await summaryOf(t.db, cloud.environmentId);
    expect(statsPart(summary)).toEqual(await stats(t.db, cloud.environmentId));
    expect(summary).toMatchObject({ workersPolling: 0, depth: 0, claimQueued: 1 });
  });

  it("workersPolling counts only the environment's own pollers", async () => {
    const a = await setupSession(t.db);
    const b = await setupSession(t.db);
    await recordPoll(t.db, a.environmentId, 'w1');
    await recordPoll(t.db, b.environmentId, 'w1');
    await recordPoll(t.db, b.environmentId, 'w2');
    const rows = await environmentSummaries(t.db, [a.environmentId, b.environmentId]);
    const byId = new Map(rows.map((r) => [r.environmentId, r.workersPolling]));
    expect(byId.get(a.environmentId)).toBe(1);
    expect(byId.get(b.environmentId)).toBe(2);
  });
});
