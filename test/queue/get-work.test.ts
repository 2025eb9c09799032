import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { maybeRow } from '../../src/db/handle.js';
import { enqueue, getWork, poll, WorkNotFoundError } from '../../src/queue/index.js';
import { useTestDb } from '../helpers/db.js';
import { lapseLease, setCreatedAt, setupSession, type WireStage, wireWork } from '../helpers/factories.js';

const STAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{0,5}[1-9])?Z$/;
const TRACE = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };

describe.each(['pg', 'pglite'] as const)('getWork (%s)', (driver) => {
  const t = useTestDb(driver);

  it('returns the full projection of a polled item', async () => {
    const target = await setupSession(t.db);
    const { work: enqueued } = await enqueue(t.db, {
      ...target,
      kind: 'tool_exec',
      metadata: { a: '1' },
      traceContext: TRACE,
    });
    const polled = await poll(t.db, target.environmentId, 60_000);
    expect(await getWork(t.db, target.environmentId, enqueued.id)).toEqual({
      id: enqueued.id,
      environmentId: target.environmentId,
      dataType: 'session',
      sessionId: target.sessionId,
      healthcheckId: null,
      kind: 'tool_exec',
      state: 'queued',
      metadata: { a: '1' },
      createdAt: enqueued.createdAt,
      acknowledgedAt: null,
      startedAt: null,
      lastHeartbeat: null,
      stopRequestedAt: null,
      stoppedAt: null,
      leaseExpiresAt: polled!.leaseExpiresAt,
      claims: 1,
      traceContext: TRACE,
    });
  });

  it.each(['queued', 'reserved', 'starting', 'active', 'stopping', 'stopped'] as WireStage[])(
    'sees a %s item, every reached stamp rendered as trimmed RFC 3339 UTC that round-trips exactly',
    async (stage) => {
      const target = await setupSession(t.db);
      const { id } = await wireWork(t.db, target, stage);
      const work = await getWork(t.db, target.environmentId, id);
      const stamps = {
        createdAt: 'created_at',
        acknowledgedAt: 'acknowledged_at',
        startedAt: 'started_at',
        lastHeartbeat: 'last_heartbeat',
        stopRequestedAt: 'stop_requested_at',
        stoppedAt: 'stopped_at',
        leaseExpiresAt: 'lease_expires_at',
      } as const;
      for (const [field, column] of Object.entries(stamps) as [keyof typeof stamps, string][]) {
        const value = work[field];
        if (value === null) continue;
        expect(value).toMatch(STAMP);
        const same = await maybeRow<{ same: boolean }>(
          t.db,
          sql`SELECT ${sql.identifier(column)} = ${value}::timestamptz AS same FROM work_items WHERE id = ${id}`,
        );
        expect(same!.same, `${field} ${value}`).toBe(true);
      }
    },
  );

  it.each([
    ['2026-08-20T02:27:23.123450Z', '2026-08-20T02:27:23.12345Z'],
    ['2026-08-20T02:27:23.000001Z', '2026-08-20T02:27:23.000001Z'],
    ['2026-08-20T02:27:23.5Z', '2026-08-20T02:27:23.5Z'],
    ['2026-08-20T02:27:23Z', '2026-08-20T02:27:23Z'],
    ['2026-08-20T02:27:00Z', '2026-08-20T02:27:00Z'],
    ['2026-08-20T00:00:00.100000+02:00', '2026-08-19T22:00:00.1Z'],
  ])('renders %s as %s', async (stored, rendered) => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'queued');
    await setCreatedAt(t.db, id, stored);
    expect((await getWork(t.db, target.environmentId, id)).createdAt).toBe(rendered);
  });

  it("renders UTC whatever the session's TimeZone", async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'queued');
    await setCreatedAt(t.db, id, '2026-08-20T02:27:23.5Z');
    const work = await t.db.transaction(async (tx) => {
      await tx.execute(sql`SET LOCAL TIME ZONE 'America/New_York'`);
      return getWork(tx, target.environmentId, id);
    });
    expect(work.createdAt).toBe('2026-08-20T02:27:23.5Z');
  });

  it('an unknown id, a foreign environment, a model_turn and a cloud tool_exec are all not found', async () => {
    const target = await setupSession(t.db);
    const other = await setupSession(t.db);
    const cloud = await setupSession(t.db, 'cloud');
    const { id } = await wireWork(t.db, target, 'active');
    const { work: turn } = await enqueue(t.db, { ...target, kind: 'model_turn' });
    const { work: web } = await enqueue(t.db, { ...target, kind: 'web_exec' });
    const { work: tool } = await enqueue(t.db, { ...cloud, kind: 'tool_exec' });
    const cases: [string, string][] = [
      [target.environmentId, 'work_missing'],
      [target.environmentId, 'work_nope'],
      [target.environmentId, target.environmentId],
      [other.environmentId, id],
      [target.environmentId, turn.id],
      [target.environmentId, web.id],
      [cloud.environmentId, tool.id],
      ['env_missing', id],
    ];
    for (const [environmentId, workId] of cases) {
      const err = await getWork(t.db, environmentId, workId).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WorkNotFoundError);
      expect((err as WorkNotFoundError).workId).toBe(workId);
    }
  });

  it('the id a re-hand-out rotated away is not found; the new one is', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'reserved');
    await lapseLease(t.db, id);
    const taken = await poll(t.db, target.environmentId, 60_000);
    await expect(getWork(t.db, target.environmentId, id)).rejects.toThrow(WorkNotFoundError);
    expect((await getWork(t.db, target.environmentId, taken!.id)).id).toBe(taken!.id);
  });
});
