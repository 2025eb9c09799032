import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { rows } from '../../src/db/handle.js';
import { claim, complete, enqueue, UnknownSessionError } from '../../src/queue/index.js';
import { useTestDb } from '../helpers/db.js';
import { countWork, createSession, readStoredWork, readWork, setupSession } from '../helpers/factories.js';
import { listenToWork } from '../helpers/listen.js';
import { registerContextManager, TEST_SPAN, underSpan } from '../helpers/otel-context.js';

registerContextManager();

const SPAN = TEST_SPAN;

describe.each(['pg', 'pglite'] as const)('enqueue (%s)', (driver) => {
  const t = useTestDb(driver);

  it('creates a queued item with a minted work id and empty metadata', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    const { created, work } = await enqueue(t.db, { environmentId, sessionId, kind: 'model_turn' });
    expect(created).toBe(true);
    expect(work.id).toMatch(/^work_[0-9a-hjkmnp-tv-z]{24}$/);
    expect(work).toMatchObject({
      environmentId,
      sessionId,
      kind: 'model_turn',
      state: 'queued',
      metadata: {},
    });
    expect(work.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/);
    expect(work.leaseExpiresAt).toBeNull();
  });

  it('is idempotent per live (session, kind) and returns the live item that covers the work', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    const first = await enqueue(t.db, { environmentId, sessionId, kind: 'model_turn' });
    const second = await enqueue(t.db, { environmentId, sessionId, kind: 'model_turn' });
    expect(second.created).toBe(false);
    expect(second.work.id).toBe(first.work.id);
    const other = await enqueue(t.db, { environmentId, sessionId, kind: 'tool_exec' });
    expect(other.created).toBe(true);
    expect(await countWork(t.db)).toBe(2);
  });

  it('a claimed (active) item still holds the slot; completing it frees the slot', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    await enqueue(t.db, { environmentId, sessionId, kind: 'model_turn' });
    const item = await claim(t.db, 'model_turn', 60_000);
    expect((await enqueue(t.db, { environmentId, sessionId, kind: 'model_turn' })).created).toBe(false);
    await complete(t.db, item!);
    expect((await enqueue(t.db, { environmentId, sessionId, kind: 'model_turn' })).created).toBe(true);
  });

  it('rejects an unknown session, an unknown environment and a session bound elsewhere', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    const { environmentId: otherEnv } = await setupSession(t.db, 'cloud');
    await expect(
      enqueue(t.db, { environmentId, sessionId: 'sesn_missing', kind: 'model_turn' }),
    ).rejects.toThrow(UnknownSessionError);
    await expect(
      enqueue(t.db, { environmentId: 'env_missing', sessionId, kind: 'model_turn' }),
    ).rejects.toThrow(UnknownSessionError);
    await expect(enqueue(t.db, { environmentId: otherEnv, sessionId, kind: 'model_turn' })).rejects.toThrow(
      UnknownSessionError,
    );
    // …even while the session has a live item of that kind in its own environment.
    await enqueue(t.db, { environmentId, sessionId, kind: 'model_turn' });
    await expect(enqueue(t.db, { environmentId: otherEnv, sessionId, kind: 'model_turn' })).rejects.toThrow(
      UnknownSessionError,
    );
    expect(await countWork(t.db)).toBe(1);
  });

  it('bindSession binds an unbound session and queues its item in one statement', async () => {
    const { environmentId } = await setupSession(t.db, 'cloud');
    const sessionId = `sesn_bind_${Math.random().toString(36).slice(2, 8)}`;
    const first = await enqueue(t.db, { environmentId, sessionId, kind: 'model_turn', bindSession: true });
    expect(first.created).toBe(true);
    const [bound] = await rows<{ environmentId: string }>(
      t.db,
      sql`SELECT environment_id AS "environmentId" FROM sessions WHERE id = ${sessionId}`,
    );
    expect(bound!.environmentId).toBe(environmentId);
    // Bound already (to this environment): the live item covers a repeat.
    const again = await enqueue(t.db, { environmentId, sessionId, kind: 'model_turn', bindSession: true });
    expect(again).toEqual({ created: false, work: first.work });
  });

  it('bindSession never rebinds a session bound elsewhere nor binds to a missing environment, and writes nothing', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    const { environmentId: otherEnv } = await setupSession(t.db, 'cloud');
    await expect(
      enqueue(t.db, { environmentId: otherEnv, sessionId, kind: 'web_exec', bindSession: true }),
    ).rejects.toThrow(UnknownSessionError);
    await expect(
      enqueue(t.db, {
        environmentId: 'env_missing',
        sessionId: 'sesn_new',
        kind: 'web_exec',
        bindSession: true,
      }),
    ).rejects.toThrow(UnknownSessionError);
    const [sessions] = await rows<{ n: number; boundTo: string }>(
      t.db,
      sql`SELECT count(*)::int AS n, max(environment_id) FILTER (WHERE id = ${sessionId}) AS "boundTo" FROM sessions`,
    );
    expect(sessions).toEqual({ n: 2, boundTo: environmentId });
    expect(await countWork(t.db)).toBe(0);
  });

  it('bindSession binds no id with a journal purge queued (held or not) and writes nothing: that binding is left to bindSession()', async () => {
    const { environmentId } = await setupSession(t.db, 'cloud');
    await t.db.execute(
      sql`INSERT INTO journal_purges (run_id, requested_at, claimed_until)
          VALUES ('plat_held', now() - interval '3 hours', now() + interval '5 minutes'),
                 ('plat_waiting', now() - interval '3 hours', NULL)`,
    );
    for (const sessionId of ['plat_held', 'plat_waiting']) {
      await expect(
        enqueue(t.db, { environmentId, sessionId, kind: 'model_turn', bindSession: true }),
      ).rejects.toThrow(UnknownSessionError);
    }
    expect(await rows(t.db, sql`SELECT id FROM sessions WHERE id LIKE 'plat%'`)).toEqual([]);
    expect(await rows(t.db, sql`SELECT run_id AS id FROM journal_purges ORDER BY run_id`)).toEqual([
      { id: 'plat_held' },
      { id: 'plat_waiting' },
    ]);
    expect(await countWork(t.db)).toBe(0);
  });

  it('projects the given string metadata onto the new item', async () => {
    const { environmentId, sessionId } = await setupSession(t.db);
    const { work } = await enqueue(t.db, {
      environmentId,
      sessionId,
      kind: 'tool_exec',
      metadata: { origin: 'turn-7', empty: '' },
    });
    expect(work.metadata).toEqual({ origin: 'turn-7', empty: '' });
    await expect(
      enqueue(t.db, { environmentId, sessionId, kind: 'web_exec', metadata: { n: 5 as unknown as string } }),
    ).rejects.toThrow(TypeError);
  });

  it('answers the new item exactly as the row stores it: every field in order, object keys in jsonb order', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'self_hosted');
    // Given out of jsonb's order (shorter keys first, then bytewise; é is two bytes).
    const metadata = { zeta: '1', é: '2', bb: '3', b: '4', a: '' };
    const traceContext = { tracestate: 'k=v', traceparent: `00-${SPAN.traceId}-00f067aa0ba902b7-01` };
    const { work } = await enqueue(t.db, {
      environmentId,
      sessionId,
      kind: 'tool_exec',
      metadata,
      traceContext,
    });
    const stored = await readStoredWork(t.db, work.id);
    expect(JSON.stringify(work)).toBe(JSON.stringify(stored));
    expect(Object.keys(work.metadata)).toEqual(['a', 'b', 'bb', 'é', 'zeta']);
    // The answer is the item's own: the caller's objects are neither returned nor reordered.
    expect(work.metadata).not.toBe(metadata);
    expect(Object.keys(metadata)).toEqual(['zeta', 'é', 'bb', 'b', 'a']);
    expect(work.traceContext).not.toBe(traceContext);
  });

  it('captures the active span as trace context for exec kinds only', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    const traced = await underSpan(() => enqueue(t.db, { environmentId, sessionId, kind: 'tool_exec' }));
    expect(traced.work.traceContext).toEqual({ traceparent: `00-${SPAN.traceId}-${SPAN.spanId}-01` });
    const turn = await underSpan(() => enqueue(t.db, { environmentId, sessionId, kind: 'model_turn' }));
    expect(turn.work.traceContext).toBeNull();
    const untraced = await enqueue(t.db, { environmentId, sessionId, kind: 'web_exec' });
    expect(untraced.work.traceContext).toBeNull();
    // Stored as SQL NULL, never `{}`.
    const raw = await t.db.execute(
      sql`SELECT count(*)::int AS n FROM work_items WHERE trace_context IS NULL`,
    );
    expect((raw as unknown as { rows: { n: number }[] }).rows[0]!.n).toBe(2);
  });

  it('joins the caller transaction: a rollback leaves no item behind', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    await expect(
      t.db.transaction(async (tx) => {
        await enqueue(tx, { environmentId, sessionId, kind: 'model_turn' });
        throw new Error('settlement failed');
      }),
    ).rejects.toThrow('settlement failed');
    expect(await countWork(t.db)).toBe(0);
    const inTx = await t.db.transaction((tx) =>
      enqueue(tx, { environmentId, sessionId, kind: 'model_turn' }),
    );
    expect(await readWork(t.db, inTx.work.id)).not.toBeNull();
  });

  it('a session can hold one live item of each kind at once', async () => {
    const { environmentId } = await setupSession(t.db, 'cloud');
    const sessionId = await createSession(t.db, environmentId);
    for (const kind of ['model_turn', 'tool_exec', 'web_exec', 'outputs_harvest', 'mcp_exec'] as const) {
      expect((await enqueue(t.db, { environmentId, sessionId, kind })).created).toBe(true);
    }
    expect(await countWork(t.db, 'queued')).toBe(5);
  });

  it('only a tool_exec on a self-hosted environment is the poll lane’s; every kind of an unknown environment is refused', async () => {
    const kinds = ['model_turn', 'tool_exec', 'web_exec', 'outputs_harvest', 'mcp_exec'] as const;
    for (const envKind of ['self_hosted', 'cloud'] as const) {
      const { environmentId } = await setupSession(t.db, envKind);
      const sessionId = await createSession(t.db, environmentId);
      for (const kind of kinds) await enqueue(t.db, { environmentId, sessionId, kind });
      const lanes = await rows<{ kind: string; lane: string }>(
        t.db,
        sql`SELECT kind, lane FROM work_items WHERE session_id = ${sessionId}`,
      );
      expect(Object.fromEntries(lanes.map((r) => [r.kind, r.lane]))).toEqual({
        model_turn: 'claim',
        tool_exec: envKind === 'self_hosted' ? 'poll' : 'claim',
        web_exec: 'claim',
        outputs_harvest: 'claim',
        mcp_exec: 'claim',
      });
    }
    const before = await countWork(t.db);
    const { sessionId } = await setupSession(t.db, 'cloud');
    for (const kind of kinds) {
      for (const bindSession of [false, true]) {
        await expect(
          enqueue(t.db, {
            environmentId: 'env_missing',
            sessionId: `${sessionId}_${bindSession}`,
            kind,
            bindSession,
          }),
        ).rejects.toThrow(UnknownSessionError);
        await expect(
          enqueue(t.db, { environmentId: 'env_missing', sessionId, kind, bindSession }),
        ).rejects.toThrow(UnknownSessionError);
      }
    }
    expect(await countWork(t.db)).toBe(before);
    expect(await rows(t.db, sql`SELECT 1 FROM sessions WHERE environment_id = 'env_missing'`)).toEqual([]);
  });
});

describe('enqueue on real PostgreSQL connections', () => {
  const t = useTestDb('pg', { poolSize: 20 });

  it('concurrent enqueues of one (session, kind) create exactly one live item', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    const results = await Promise.all(
      Array.from({ length: 32 }, () => enqueue(t.db, { environmentId, sessionId, kind: 'model_turn' })),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.work.id)).size).toBe(1);
    expect(await countWork(t.db)).toBe(1);
  });

  it('concurrent binding enqueues of one new session bind it once and queue one live item per kind: none fails on the binding', async () => {
    const { environmentId } = await setupSession(t.db, 'cloud');
    const kinds = ['model_turn', 'tool_exec', 'web_exec', 'outputs_harvest'] as const;
    for (let round = 0; round < 150; round++) {
      const sessionId = `sesn_race_${round}_${Math.random().toString(36).slice(2, 8)}`;
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          enqueue(t.db, { environmentId, sessionId, kind: kinds[i % kinds.length]!, bindSession: true }),
        ),
      );
      expect(results.filter((r) => r.created)).toHaveLength(kinds.length);
      expect(new Set(results.map((r) => r.work.id)).size).toBe(kinds.length);
    }
  });

  it('concurrent enqueues in open transactions agree on one live item once they commit', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    const results = await Promise.all(
      Array.from({ length: 12 }, () =>
        t.db.transaction(async (tx) => {
          const r = await enqueue(tx, { environmentId, sessionId, kind: 'model_turn' });
          await tx.execute(sql`SELECT pg_sleep(0.01)`);
          return r;
        }),
      ),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.work.id)).size).toBe(1);
  });

  it('wakes pollers only when the enqueuing transaction commits, and only for the poll lane', async () => {
    const { client: listener, received } = await listenToWork(t.url!);
    try {
      const selfHosted = await setupSession(t.db, 'self_hosted');
      const cloud = await setupSession(t.db, 'cloud');
      let notifiedInside = -1;
      const arrived = new Promise<void>((resolve) => listener.once('notification', () => resolve()));
      await t.db.transaction(async (tx) => {
        await enqueue(tx, { ...cloud, kind: 'tool_exec' });
        await enqueue(tx, { ...selfHosted, kind: 'tool_exec' });
        await listener.query('SELECT 1'); // a round trip on the listener: nothing may arrive yet
        notifiedInside = received.length;
      });
      await arrived;
      expect(notifiedInside).toBe(0);
      expect(received.map((p) => JSON.parse(p))).toEqual([{ environment_id: selfHosted.environmentId }]);
    } finally {
      await listener.end();
    }
  });
});
