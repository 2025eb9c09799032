import { describe, expect, it } from 'vitest';
import { RenderedSql } from '../../src/db/fixed-sql.js';
import { renderSql } from '../../src/db/render.js';
import {
  ack,
  cancelSession,
  enqueue,
  getWork,
  HeartbeatMismatchError,
  heartbeat,
  NO_HEARTBEAT,
  poll,
  STARTUP_LEASE_MS,
  WorkNotFoundError,
} from '../../src/queue/index.js';
import { useTestDb } from '../helpers/db.js';
import { lapseLease, leaseWindowMs, readWork, setupSession, wireWork } from '../helpers/factories.js';
import { sentQueries } from '../helpers/plans.js';

const STAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{0,5}[1-9])?Z$/;

describe.each(['pg', 'pglite'] as const)('ack (%s)', (driver) => {
  const t = useTestDb(driver);

  it('moves a polled item to starting, stamping acknowledged_at and installing a 30 s startup lease', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'reserved');
    const work = await ack(t.db, target.environmentId, id);
    expect(work).toMatchObject({
      id,
      state: 'starting',
      acknowledgedAt: expect.stringMatching(STAMP),
      startedAt: null,
      lastHeartbeat: null,
      stopRequestedAt: null,
      stoppedAt: null,
    });
    expect(STARTUP_LEASE_MS).toBe(30_000);
    // The startup lease replaces the reservation, measured from the ack itself.
    expect(await leaseWindowMs(t.db, id)).toBeCloseTo(30_000, 6);
    expect(await getWork(t.db, target.environmentId, id)).toEqual(work);
  });

  it('is idempotent: a re-ack returns the item unchanged, same acknowledged_at and lease', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'reserved');
    const first = await ack(t.db, target.environmentId, id);
    const again = await ack(t.db, target.environmentId, id);
    expect(again).toEqual(first);
    expect((await readWork(t.db, id))!.lease).toBe(first.leaseExpiresAt);
  });

  it('needs no prior poll: a listed, never-polled item is acked by its enqueue id', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'queued');
    const work = await ack(t.db, target.environmentId, id);
    expect(work).toMatchObject({ id, state: 'starting', claims: 0 });
    expect(await leaseWindowMs(t.db, id)).toBeCloseTo(30_000, 6);
    // …and the startup lease keeps polls off it.
    expect(await poll(t.db, target.environmentId, 60_000)).toBeNull();
  });

  it('still acks a queued item whose reservation lapsed, as long as no poll re-handed it out', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'reserved');
    await lapseLease(t.db, id);
    expect((await ack(t.db, target.environmentId, id)).state).toBe('starting');
    expect(await poll(t.db, target.environmentId, 60_000)).toBeNull();
  });

  it('returns an active item unchanged, leaving its heartbeat lease alone', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'active');
    const before = await readWork(t.db, id);
    const work = await ack(t.db, target.environmentId, id);
    expect(work.state).toBe('active');
    expect(await readWork(t.db, id)).toEqual(before);
  });

  it.each(['stopping', 'stopped'] as const)('returns a %s item unchanged', async (stage) => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, stage);
    const before = await getWork(t.db, target.environmentId, id);
    const work = await ack(t.db, target.environmentId, id);
    expect(work).toEqual(before);
  });

  it('does not revive an item a cancelled session stopped before it was acked', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'reserved');
    await cancelSession(t.db, target.sessionId);
    const work = await ack(t.db, target.environmentId, id);
    expect(work).toMatchObject({ state: 'stopped', acknowledgedAt: null, leaseExpiresAt: null });
  });

  it('acked items can be claimed with NO_HEARTBEAT; un-acked ones cannot', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'reserved');
    await expect(heartbeat(t.db, target.environmentId, id, NO_HEARTBEAT, 30)).rejects.toThrow(
      HeartbeatMismatchError,
    );
    await ack(t.db, target.environmentId, id);
    expect((await heartbeat(t.db, target.environmentId, id, NO_HEARTBEAT, 30)).state).toBe('active');
  });

  it('an unknown, foreign-environment, model_turn or cloud tool_exec id is not found and left untouched', async () => {
    const target = await setupSession(t.db);
    const other = await setupSession(t.db);
    const cloud = await setupSession(t.db, 'cloud');
    const { id } = await wireWork(t.db, target, 'reserved');
    const { work: turn } = await enqueue(t.db, { ...target, kind: 'model_turn' });
    const { work: cloudTool } = await enqueue(t.db, { ...cloud, kind: 'tool_exec' });
    await expect(ack(t.db, target.environmentId, 'work_missing')).rejects.toThrow(WorkNotFoundError);
    await expect(ack(t.db, other.environmentId, id)).rejects.toThrow(WorkNotFoundError);
    await expect(ack(t.db, target.environmentId, turn.id)).rejects.toThrow(WorkNotFoundError);
    await expect(ack(t.db, cloud.environmentId, cloudTool.id)).rejects.toThrow(WorkNotFoundError);
    for (const workId of [id, turn.id, cloudTool.id])
      expect((await readWork(t.db, workId))!.state).toBe('queued');
  });
});

describe('ack statement', () => {
  it('sends one fixed statement (its text rendered once) with the environment and item of each call', async () => {
    const [a] = await sentQueries((db) => ack(db, 'env_a', 'work_a'));
    const [b] = await sentQueries((db) => ack(db, 'env_b', 'work_b'));
    expect(a).toBeInstanceOf(RenderedSql);
    expect(renderSql(b!).sql).toBe(renderSql(a!).sql);
    expect(renderSql(a!).params).toEqual(expect.arrayContaining(['env_a', 'work_a', STARTUP_LEASE_MS]));
    expect(renderSql(b!).params).toEqual(expect.arrayContaining(['env_b', 'work_b']));
  });
});
