import { describe, expect, it } from 'vitest';
import { RenderedSql } from '../../src/db/fixed-sql.js';
import { renderSql } from '../../src/db/render.js';
import {
  claim,
  enqueue,
  getWork,
  poll,
  stop,
  type Work,
  WorkConflictError,
  WorkNotFoundError,
} from '../../src/queue/index.js';
import { useTestDb } from '../helpers/db.js';
import {
  compareTimestamps,
  lapseLease,
  readWork,
  setupSession,
  type WireStage,
  wireWork,
} from '../helpers/factories.js';
import { sentQueries } from '../helpers/plans.js';

const STAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{0,5}[1-9])?Z$/;

/** Awaits a stop expected to conflict and returns the state it reported. */
async function conflict(promise: Promise<Work>): Promise<string> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkConflictError);
  return (err as WorkConflictError).state;
}

describe.each(['pg', 'pglite'] as const)('stop (%s)', (driver) => {
  const t = useTestDb(driver);

  it('a graceful stop of an active item winds it down: stopping, stop_requested_at set, lease kept', async () => {
    const target = await setupSession(t.db);
    const { id, lastHeartbeat } = await wireWork(t.db, target, 'active');
    const before = await getWork(t.db, target.environmentId, id);
    const work = await stop(t.db, target.environmentId, id, false);
    expect(work).toEqual({
      ...before,
      state: 'stopping',
      stopRequestedAt: expect.stringMatching(STAMP),
      stoppedAt: null,
    });
    expect(work.leaseExpiresAt).toBe(before.leaseExpiresAt);
    expect(work.lastHeartbeat).toBe(lastHeartbeat);
    expect(await getWork(t.db, target.environmentId, id)).toEqual(work);
  });

  it.each([
    ['queued', 'a never-polled queued item (by its enqueue id)'],
    ['reserved', 'a polled, un-acked item'],
    ['starting', 'an acked item'],
  ] as [WireStage, string][])(
    'a graceful stop of %s stops it outright, stamping both stop times and clearing the lease (%s)',
    async (stage) => {
      const target = await setupSession(t.db);
      const { id } = await wireWork(t.db, target, stage);
      const work = await stop(t.db, target.environmentId, id, false);
      expect(work).toMatchObject({
        id,
        state: 'stopped',
        stopRequestedAt: expect.stringMatching(STAMP),
        leaseExpiresAt: null,
      });
      // One statement, one database time.
      expect(work.stoppedAt).toBe(work.stopRequestedAt);
      expect((await readWork(t.db, id))!.lease).toBeNull();
    },
  );

  it.each(['queued', 'reserved', 'starting', 'active'] as WireStage[])(
    'a force stop of a %s item stops it at once, both stamps set and the lease cleared',
    async (stage) => {
      const target = await setupSession(t.db);
      const { id } = await wireWork(t.db, target, stage);
      const work = await stop(t.db, target.environmentId, id, true);
      expect(work).toMatchObject({
        state: 'stopped',
        leaseExpiresAt: null,
        stoppedAt: expect.stringMatching(STAMP),
      });
      expect(work.stopRequestedAt).toBe(work.stoppedAt);
    },
  );

  it('a stopping item: graceful stop conflicts; force stops it, keeping the first stop_requested_at; then force conflicts', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'active');
    const stopping = await stop(t.db, target.environmentId, id, false);
    expect(await conflict(stop(t.db, target.environmentId, id, false))).toBe('stopping');
    expect(await getWork(t.db, target.environmentId, id)).toEqual(stopping);

    const stopped = await stop(t.db, target.environmentId, id, true);
    expect(stopped).toMatchObject({
      state: 'stopped',
      leaseExpiresAt: null,
      stopRequestedAt: stopping.stopRequestedAt,
    });
    expect(await compareTimestamps(t.db, stopped.stopRequestedAt!, stopped.stoppedAt!)).toBe(-1);

    expect(await conflict(stop(t.db, target.environmentId, id, true))).toBe('stopped');
    expect(await conflict(stop(t.db, target.environmentId, id, false))).toBe('stopped');
    expect(await getWork(t.db, target.environmentId, id)).toEqual(stopped);
  });

  it('a stopped item conflicts on both graceful and force stops and is left unchanged', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'queued');
    const stopped = await stop(t.db, target.environmentId, id, false);
    expect(await conflict(stop(t.db, target.environmentId, id, false))).toBe('stopped');
    expect(await conflict(stop(t.db, target.environmentId, id, true))).toBe('stopped');
    expect(await getWork(t.db, target.environmentId, id)).toEqual(stopped);
  });

  it('a stopped item is never handed out again', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'reserved');
    await stop(t.db, target.environmentId, id, false);
    expect(await poll(t.db, target.environmentId, 60_000)).toBeNull();
  });

  it('a stopping item frees the live slot: the session can enqueue a new tool_exec, which polls out', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'active');
    await stop(t.db, target.environmentId, id, false);
    const { created, work } = await enqueue(t.db, { ...target, kind: 'tool_exec' });
    expect(created).toBe(true);
    expect(work.id).not.toBe(id);
    expect((await poll(t.db, target.environmentId, 60_000))!.id).toBe(work.id);
    expect((await readWork(t.db, id))!.state).toBe('stopping');
  });

  it('an abandoned wind-down settles stopped on the next poll, not re-offered', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'active');
    await stop(t.db, target.environmentId, id, false);
    await lapseLease(t.db, id);
    expect(await poll(t.db, target.environmentId, 60_000)).toBeNull();
    expect(await getWork(t.db, target.environmentId, id)).toMatchObject({
      state: 'stopped',
      stoppedAt: expect.stringMatching(STAMP),
      leaseExpiresAt: null,
    });
  });

  it('an unknown or foreign-environment id is not found, for graceful and force stops', async () => {
    const target = await setupSession(t.db);
    const other = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'active');
    for (const force of [false, true]) {
      await expect(stop(t.db, target.environmentId, 'work_missing', force)).rejects.toThrow(
        WorkNotFoundError,
      );
      await expect(stop(t.db, other.environmentId, id, force)).rejects.toThrow(WorkNotFoundError);
    }
    expect((await readWork(t.db, id))!.state).toBe('active');
  });

  it('a model_turn id or a cloud tool_exec id is not found, and the item stays claimable on its lane', async () => {
    const selfHosted = await setupSession(t.db);
    const cloud = await setupSession(t.db, 'cloud');
    const { work: turn } = await enqueue(t.db, { ...selfHosted, kind: 'model_turn' });
    const { work: tool } = await enqueue(t.db, { ...cloud, kind: 'tool_exec' });
    for (const force of [false, true]) {
      await expect(stop(t.db, selfHosted.environmentId, turn.id, force)).rejects.toThrow(WorkNotFoundError);
      await expect(stop(t.db, cloud.environmentId, tool.id, force)).rejects.toThrow(WorkNotFoundError);
    }
    expect((await claim(t.db, 'model_turn', 60_000))!.id).toBe(turn.id);
    expect((await claim(t.db, 'tool_exec', 60_000))!.id).toBe(tool.id);
  });
});

describe('stop statements', () => {
  it('a forced and a graceful stop each send their one fixed statement (rendered once), with the values of each call', async () => {
    const sent = async (force: boolean, env: string, id: string) =>
      (await sentQueries((db) => stop(db, env, id, force)))[0]!;
    for (const force of [true, false]) {
      const a = await sent(force, 'env_a', 'work_a');
      const b = await sent(force, 'env_b', 'work_b');
      expect(a).toBeInstanceOf(RenderedSql);
      expect(renderSql(b).sql).toBe(renderSql(a).sql);
      expect(renderSql(a).params).toEqual(expect.arrayContaining(['env_a', 'work_a']));
      expect(renderSql(b).params).toEqual(expect.arrayContaining(['env_b', 'work_b']));
    }
    const forced = renderSql(await sent(true, 'env_a', 'work_a')).sql;
    const graceful = renderSql(await sent(false, 'env_a', 'work_a')).sql;
    expect(forced).not.toBe(graceful);
    expect(graceful).toContain("'stopping'");
  });
});
