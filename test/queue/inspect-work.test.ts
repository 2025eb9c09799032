import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { claim, enqueue, getWork } from '../../src/queue/index.js';
import { inspectWork } from '../../src/queue/inspect-work.js';
import { useTestDb } from '../helpers/db.js';
import {
  createSession,
  lapseLease,
  readWork,
  setCreatedAt,
  setupSession,
  wireWork,
} from '../helpers/factories.js';

/** RFC 3339 UTC with up to six fraction digits, trailing zeros trimmed, fraction dropped when zero. */
const RFC3339_US = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{0,5}[1-9])?Z$/;

describe.each(['pg', 'pglite'] as const)('inspectWork (%s)', (driver) => {
  const t = useTestDb(driver);

  it('an unknown id yields null', async () => {
    await setupSession(t.db);
    expect(await inspectWork(t.db, 'work_missing')).toBeNull();
  });

  it('finds a poll-lane item by id alone, with lane, updatedAt and no lease', async () => {
    const target = await setupSession(t.db, 'self_hosted');
    const { work } = await enqueue(t.db, { ...target, kind: 'tool_exec' });
    expect(await inspectWork(t.db, work.id)).toMatchObject({
      id: work.id,
      environmentId: target.environmentId,
      sessionId: target.sessionId,
      kind: 'tool_exec',
      state: 'queued',
      lane: 'poll',
      leaseLive: null,
      updatedAt: expect.stringMatching(RFC3339_US),
    });
  });

  it('finds a claim-lane item by id too, which the wire scope hides', async () => {
    const self = await setupSession(t.db, 'self_hosted');
    const cloud = await setupSession(t.db, 'cloud');
    const { work: turn } = await enqueue(t.db, { ...self, kind: 'model_turn' });
    const { work: cloudTool } = await enqueue(t.db, { ...cloud, kind: 'tool_exec' });
    expect(await inspectWork(t.db, turn.id)).toMatchObject({
      id: turn.id,
      lane: 'claim',
      kind: 'model_turn',
    });
    expect(await inspectWork(t.db, cloudTool.id)).toMatchObject({
      id: cloudTool.id,
      environmentId: cloud.environmentId,
      lane: 'claim',
      kind: 'tool_exec',
    });
    await expect(getWork(t.db, self.environmentId, turn.id)).rejects.toThrow();
  });

  it('a claimed item reports its lease live, then lapsed once the lease is backdated', async () => {
    const cloud = await setupSession(t.db, 'cloud');
    const { work } = await enqueue(t.db, { ...cloud, kind: 'model_turn' });
    const item = await claim(t.db, 'model_turn', 60_000);
    expect(item!.id).toBe(work.id);
    expect(await inspectWork(t.db, work.id)).toMatchObject({
      state: 'active',
      leaseExpiresAt: item!.lease,
      leaseLive: true,
      claims: 1,
    });
    await lapseLease(t.db, work.id);
    expect(await inspectWork(t.db, work.id)).toMatchObject({ state: 'active', leaseLive: false });
  });

  it('renders every Work field exactly as getWork does, timestamps to the microsecond', async () => {
    const target = await setupSession(t.db, 'self_hosted');
    for (const stage of ['queued', 'reserved', 'active', 'stopping', 'stopped'] as const) {
      const sessionId = await createSession(t.db, target.environmentId);
      const { id } = await wireWork(t.db, { environmentId: target.environmentId, sessionId }, stage, {
        metadata: { stage },
      });
      await setCreatedAt(t.db, id, '2026-01-01T00:00:00.123456Z');
      const wire = await getWork(t.db, target.environmentId, id);
      const inspected = await inspectWork(t.db, id);
      const { lane, updatedAt, leaseLive, heartbeats, ...work } = inspected!;
      expect(work).toEqual(wire);
      expect(lane).toBe('poll');
      expect(updatedAt).toMatch(RFC3339_US);
      expect(leaseLive).toBe(wire.leaseExpiresAt === null ? null : true);
      expect(heartbeats).toBe(wire.lastHeartbeat === null ? 0 : 1);
      expect(inspected!.createdAt).toBe('2026-01-01T00:00:00.123456Z');
      for (const value of [
        work.createdAt,
        work.acknowledgedAt,
        work.startedAt,
        work.lastHeartbeat,
        work.stopRequestedAt,
        work.stoppedAt,
        work.leaseExpiresAt,
      ]) {
        if (value !== null) expect(value).toMatch(RFC3339_US);
      }
      // Stopped first so the next stage's item is the environment's only available one.
      if (stage === 'queued' || stage === 'reserved') {
        await t.db.execute(
          sql`UPDATE work_items SET state = 'stopped', stopped_at = now(), lease_expires_at = NULL WHERE id = ${id}`,
        );
      }
    }
  });

  it('timestamps trim trailing zeros and drop a zero fraction, as the rest of the queue renders them', async () => {
    const target = await setupSession(t.db);
    const { work } = await enqueue(t.db, { ...target, kind: 'tool_exec' });
    await setCreatedAt(t.db, work.id, '2026-01-01T00:00:00.1Z');
    expect((await inspectWork(t.db, work.id))!.createdAt).toBe('2026-01-01T00:00:00.1Z');
    await setCreatedAt(t.db, work.id, '2026-01-01T00:00:00.000001Z');
    expect((await inspectWork(t.db, work.id))!.createdAt).toBe('2026-01-01T00:00:00.000001Z');
    await setCreatedAt(t.db, work.id, '2026-01-01T00:00:00Z');
    expect((await inspectWork(t.db, work.id))!.createdAt).toBe('2026-01-01T00:00:00Z');
    await setCreatedAt(t.db, work.id, '2026-01-01T02:00:00.5+02:00');
    expect((await inspectWork(t.db, work.id))!.createdAt).toBe('2026-01-01T00:00:00.5Z');
  });

  it('a reserved item reports the same lease proof as the stored row', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'reserved');
    const stored = await readWork(t.db, id);
    expect(await inspectWork(t.db, id)).toMatchObject({ leaseExpiresAt: stored!.lease, leaseLive: true });
  });
});
