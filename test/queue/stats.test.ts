import { describe, expect, it } from 'vitest';
import { ack, enqueue, poll, recordPoll, stats, WORKERS_POLLING_WINDOW_MS } from '../../src/queue/index.js';
import { useTestDb } from '../helpers/db.js';
import {
  agePoll,
  createSession,
  insertWork,
  lapseLease,
  setCreatedAt,
  setupSession,
  wireWork,
} from '../helpers/factories.js';

const EMPTY = { depth: 0, pending: 0, oldestQueuedAt: null, workersPolling: 0 };

describe.each(['pg', 'pglite'] as const)('stats (%s)', (driver) => {
  const t = useTestDb(driver);

  it('an empty environment reports zeros and no oldest item', async () => {
    const { environmentId } = await setupSession(t.db);
    expect(await stats(t.db, environmentId)).toEqual(EMPTY);
  });

  it('an unknown environment reports zeros too', async () => {
    expect(await stats(t.db, 'env_missing')).toEqual(EMPTY);
  });

  it('depth counts takeable items, pending live reservations; an acked item leaves both; oldest spans both', async () => {
    const { environmentId, sessionId } = await setupSession(t.db);
    const other = await createSession(t.db, environmentId);
    const { work: a } = await enqueue(t.db, { environmentId, sessionId, kind: 'tool_exec' });
    const { work: b } = await enqueue(t.db, { environmentId, sessionId: other, kind: 'tool_exec' });
    await setCreatedAt(t.db, a.id, '2026-01-01T00:00:01.5Z');
    await setCreatedAt(t.db, b.id, '2026-01-01T00:00:02.25Z');
    expect(await stats(t.db, environmentId)).toEqual({
      depth: 2,
      pending: 0,
      oldestQueuedAt: '2026-01-01T00:00:01.5Z',
      workersPolling: 0,
    });

    const polled = await poll(t.db, environmentId, 60_000);
    expect(polled!.id).toBe(a.id);
    expect(await stats(t.db, environmentId)).toMatchObject({
      depth: 1,
      pending: 1,
      oldestQueuedAt: '2026-01-01T00:00:01.5Z',
    });

    await ack(t.db, environmentId, a.id);
    expect(await stats(t.db, environmentId)).toMatchObject({
      depth: 1,
      pending: 0,
      oldestQueuedAt: '2026-01-01T00:00:02.25Z',
    });
  });

  it('a lapsed reservation counts toward depth again, not pending', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'reserved');
    expect(await stats(t.db, target.environmentId)).toMatchObject({ depth: 0, pending: 1 });
    await lapseLease(t.db, id);
    expect(await stats(t.db, target.environmentId)).toMatchObject({ depth: 1, pending: 0 });
  });

  it('starting, active, stopping and stopped items count toward neither, even with a lapsed lease', async () => {
    const target = await setupSession(t.db);
    for (const state of ['starting', 'active', 'stopping'] as const) {
      for (const leaseInMs of [-1_000, 60_000]) {
        // A fresh session each: live items hold their session's slot.
        const sessionId = await createSession(t.db, target.environmentId);
        await insertWork(t.db, { ...target, sessionId }, { state, leaseInMs });
      }
    }
    await insertWork(t.db, target, { state: 'stopped' });
    expect(await stats(t.db, target.environmentId)).toEqual(EMPTY);
  });

  it('other kinds of work and other environments do not count', async () => {
    const target = await setupSession(t.db);
    const other = await setupSession(t.db);
    for (const kind of ['model_turn', 'web_exec', 'mcp_exec', 'outputs_harvest'] as const) {
      await enqueue(t.db, { ...target, kind });
    }
    await enqueue(t.db, { ...other, kind: 'tool_exec' });
    const second = await createSession(t.db, other.environmentId);
    await enqueue(t.db, { environmentId: other.environmentId, sessionId: second, kind: 'tool_exec' });
    await recordPoll(t.db, other.environmentId, 'w-other');
    expect(await stats(t.db, target.environmentId)).toEqual(EMPTY);
    expect(await stats(t.db, other.environmentId)).toMatchObject({ depth: 2, workersPolling: 1 });
  });

  it('counts distinct workers that polled within the last 30 s', async () => {
    const { environmentId } = await setupSession(t.db);
    expect(WORKERS_POLLING_WINDOW_MS).toBe(30_000);
    await recordPoll(t.db, environmentId, 'a');
    await recordPoll(t.db, environmentId, 'a');
    await recordPoll(t.db, environmentId, 'b');
    expect((await stats(t.db, environmentId)).workersPolling).toBe(2);
    await agePoll(t.db, environmentId, 'a', 29_000);
    expect((await stats(t.db, environmentId)).workersPolling).toBe(2);
    await agePoll(t.db, environmentId, 'a', 31_000);
    expect((await stats(t.db, environmentId)).workersPolling).toBe(1);
    await agePoll(t.db, environmentId, 'b', 60_000);
    expect((await stats(t.db, environmentId)).workersPolling).toBe(0);
  });

  it('an idle environment with a recent poller reports 0/0/null/1', async () => {
    const { environmentId } = await setupSession(t.db);
    await recordPoll(t.db, environmentId, 'worker-1');
    expect(await stats(t.db, environmentId)).toEqual({ ...EMPTY, workersPolling: 1 });
  });

  it('a cloud environment reports all zeros, even with a queued tool_exec and a recorded poll', async () => {
    const cloud = await setupSession(t.db, 'cloud');
    await enqueue(t.db, { ...cloud, kind: 'tool_exec' });
    await recordPoll(t.db, cloud.environmentId, 'worker-1');
    expect(await stats(t.db, cloud.environmentId)).toEqual(EMPTY);
  });
});
