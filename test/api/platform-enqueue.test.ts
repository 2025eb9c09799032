import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/api/errors.js';
import { bindAndEnqueue } from '../../src/api/routes/platform-enqueue.js';
import type { SqlHandle } from '../../src/db/handle.js';
import { rows } from '../../src/db/handle.js';
import { newId } from '../../src/ids.js';
import { WORK_KINDS } from '../../src/queue/types.js';
import { claimJournalPurges } from '../../src/sessions/claim-journal-purges.js';
import { JOURNAL_PURGE_GRACE_MS } from '../../src/sessions/index.js';
import { useTestDb } from '../helpers/db.js';
import { countWork, createEnvironment, readWork, setupSession } from '../helpers/factories.js';
import { errorType, PLATFORM, platformSetup } from '../helpers/platform.js';

const TRACEPARENT = `00-${'4bf92f3577b34da6a3ce929d0e0e4736'}-${'00f067aa0ba902b7'}-01`;

async function boundTo(db: SqlHandle, sessionId: string): Promise<string[]> {
  const found = await rows<{ e: string }>(
    db,
    sql`SELECT environment_id AS e FROM sessions WHERE id = ${sessionId}`,
  );
  return found.map((r) => r.e);
}

describe('POST /v1/platform/work', () => {
  const t = useTestDb('pg');

  it('queues a new item and answers 201 with the wire work shape plus its kind', async () => {
    const p = await platformSetup(t.db);
    const res = await p.post('/work', {
      environment_id: p.env.environmentId,
      session_id: p.env.sessionId,
      kind: 'model_turn',
      metadata: { turn: '1' },
    });
    expect(res.status).toBe(201);
    const body = (await res.json()) as { created: boolean; work: Record<string, unknown> };
    expect(body.created).toBe(true);
    expect(body.work).toMatchObject({
      type: 'work',
      environment_id: p.env.environmentId,
      data: { type: 'session', id: p.env.sessionId },
      state: 'queued',
      kind: 'model_turn',
      metadata: { turn: '1' },
      acknowledged_at: null,
      latest_heartbeat_at: null,
      started_at: null,
      stop_requested_at: null,
      stopped_at: null,
      secret: null,
    });
    expect(body.work.id).toMatch(/^work_[0-9a-z]{24}$/);
    expect(body.work.created_at).toMatch(/Z$/);
    expect(await readWork(t.db, body.work.id as string)).toMatchObject({ state: 'queued' });
  });

  it('binds an unseen session to the environment on its first enqueue', async () => {
    const p = await platformSetup(t.db);
    const session = 'platform-minted_Session-1';
    const res = await p.post('/work', {
      environment_id: p.env.environmentId,
      session_id: session,
      kind: 'web_exec',
    });
    expect(res.status).toBe(201);
    expect(await boundTo(t.db, session)).toEqual([p.env.environmentId]);
  });

  it('an enqueue a live item covers answers 200 created:false with the same work id and its metadata unchanged', async () => {
    const p = await platformSetup(t.db);
    const body = { environment_id: p.env.environmentId, session_id: p.env.sessionId, kind: 'mcp_exec' };
    const first = (await (await p.post('/work', { ...body, metadata: { a: '1' } })).json()) as {
      work: { id: string };
    };
    const again = await p.post('/work', { ...body, metadata: { a: '2' } });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({
      created: false,
      work: { id: first.work.id, metadata: { a: '1' } },
    });
    expect(await countWork(t.db)).toBe(1);
  });

  it('a session bound to another environment is a 400 and queues nothing', async () => {
    const p = await platformSetup(t.db);
    const other = await createEnvironment(t.db, 'cloud');
    const res = await p.post('/work', {
      environment_id: other,
      session_id: p.env.sessionId,
      kind: 'model_turn',
    });
    expect(await errorType(res, 400)).toBe('invalid_request_error');
    expect(await countWork(t.db)).toBe(0);
    expect(await boundTo(t.db, p.env.sessionId)).toEqual([p.env.environmentId]);
  });

  it('a deleted session whose journal is being purged is a 503 with retry-after, and binds again once the purge is done', async () => {
    const p = await platformSetup(t.db);
    await t.db.execute(
      sql`INSERT INTO journal_purges (run_id, requested_at, claimed_until)
          VALUES ('came-back', now() - interval '3 hours', now() + interval '5 minutes')`,
    );
    const body = { environment_id: p.env.environmentId, session_id: 'came-back', kind: 'model_turn' };
    const refused = await p.post('/work', body);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await errorType(refused, 503)).toBe('overloaded_error');
    expect(await countWork(t.db)).toBe(0);
    expect(await boundTo(t.db, 'came-back')).toEqual([]);

    // The housekeeping run that held it purged the journal and forgot the row.
    await t.db.execute(sql`DELETE FROM journal_purges WHERE run_id = 'came-back'`);
    const res = await p.post('/work', body);
    expect(res.status).toBe(201);
    expect(await boundTo(t.db, 'came-back')).toEqual([p.env.environmentId]);
  });

  it('an unknown or malformed environment id is a 404 not_found_error and binds nothing', async () => {
    const p = await platformSetup(t.db);
    for (const environmentId of [newId('env'), 'env_nope', newId('work')]) {
      const res = await p.post('/work', {
        environment_id: environmentId,
        session_id: 'unbound-1',
        kind: 'model_turn',
      });
      expect(await errorType(res, 404)).toBe('not_found_error');
    }
    expect(await boundTo(t.db, 'unbound-1')).toEqual([]);
  });

  it('takes session ids of 1–128 characters of [A-Za-z0-9_-] and refuses anything else with 400', async () => {
    const p = await platformSetup(t.db);
    const enqueue = (session_id: unknown) =>
      p.post('/work', { environment_id: p.env.environmentId, session_id, kind: 'model_turn' });
    for (const ok of ['x', 'A-z_09', 's'.repeat(128)]) expect((await enqueue(ok)).status).toBe(201);
    for (const bad of ['', 's'.repeat(129), 'a b', 'a.b', 'a/b', 'sé', 'a\n', 42, null]) {
      expect(await errorType(await enqueue(bad), 400)).toBe('invalid_request_error');
    }
  });

  it('takes each of the five kinds and refuses any other with 400', async () => {
    const p = await platformSetup(t.db);
    for (const kind of WORK_KINDS) {
      const res = await p.post('/work', {
        environment_id: p.env.environmentId,
        session_id: p.env.sessionId,
        kind,
      });
      expect(res.status).toBe(201);
      expect(((await res.json()) as { work: { kind: string } }).work.kind).toBe(kind);
    }
    for (const kind of ['bogus', 'MODEL_TURN', '', undefined]) {
      const res = await p.post('/work', {
        environment_id: p.env.environmentId,
        session_id: p.env.sessionId,
        kind,
      });
      expect(res.status).toBe(400);
    }
  });

  it('metadata is string → string with at most 16 pairs, keys ≤ 64 and values ≤ 512 characters', async () => {
    const p = await platformSetup(t.db);
    let s = 0;
    const enqueue = (metadata: unknown) =>
      p.post('/work', {
        environment_id: p.env.environmentId,
        session_id: `meta-${++s}`,
        kind: 'web_exec',
        metadata,
      });
    const pairs = (count: number) =>
      Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, 'v']));
    for (const ok of [{}, pairs(16), { ['k'.repeat(64)]: 'v'.repeat(512) }]) {
      expect((await enqueue(ok)).status).toBe(201);
    }
    for (const bad of [
      pairs(17),
      { ['k'.repeat(65)]: 'v' },
      { k: 'v'.repeat(513) },
      { '': 'v' },
      { k: 1 },
      { k: null },
      ['v'],
      'k=v',
      null,
    ]) {
      expect(await errorType(await enqueue(bad), 400)).toBe('invalid_request_error');
    }
    expect(await countWork(t.db)).toBe(3);
  });

  it('unknown fields, a missing field and a body that is not a JSON object are 400s', async () => {
    const p = await platformSetup(t.db);
    const base = { environment_id: p.env.environmentId, session_id: p.env.sessionId, kind: 'model_turn' };
    const res = await p.post('/work', { ...base, priority: 1 });
    expect(await errorType(res, 400)).toBe('invalid_request_error');
    const { environment_id: _omit, ...missing } = base;
    for (const bad of [missing, undefined, '[]', '{"environment_id":', 'null']) {
      expect((await p.post('/work', bad)).status).toBe(400);
    }
    expect(await countWork(t.db)).toBe(0);
  });

  it('a valid traceparent header, with its tracestate, becomes the item trace context', async () => {
    const p = await platformSetup(t.db);
    const res = await p.post(
      '/work',
      { environment_id: p.env.environmentId, session_id: p.env.sessionId, kind: 'tool_exec' },
      { traceparent: TRACEPARENT, tracestate: 'vendor=abc' },
    );
    const { work } = (await res.json()) as { work: { id: string } };
    expect((await readWork(t.db, work.id))!.traceContext).toEqual({
      traceparent: TRACEPARENT,
      tracestate: 'vendor=abc',
    });
    expect((await p.claim('tool_exec'))!.trace_context).toEqual({
      traceparent: TRACEPARENT,
      tracestate: 'vendor=abc',
    });
  });

  it('an invalid traceparent is ignored rather than refused, and its tracestate with it', async () => {
    const p = await platformSetup(t.db);
    const invalid = [
      TRACEPARENT.toUpperCase(),
      `01-${'4'.repeat(32)}-${'0'.repeat(15)}1-01`,
      `00-${'0'.repeat(32)}-${'1'.repeat(16)}-01`,
      `00-${'1'.repeat(32)}-${'0'.repeat(16)}-01`,
      `00-${'1'.repeat(31)}-${'1'.repeat(16)}-01`,
      `${TRACEPARENT}, ${TRACEPARENT}`,
      'garbage',
    ];
    for (const [i, traceparent] of invalid.entries()) {
      const res = await p.post(
        '/work',
        { environment_id: p.env.environmentId, session_id: `trace-${i}`, kind: 'web_exec' },
        { traceparent, tracestate: 'vendor=abc' },
      );
      expect(res.status).toBe(201);
      const { work } = (await res.json()) as { work: { id: string } };
      expect((await readWork(t.db, work.id))!.traceContext).toBeNull();
    }
  });

  it('an enqueue that fails after binding leaves the session unbound (one statement)', async () => {
    const p = await platformSetup(t.db);
    // A fault inside the item's insert, after the binding in the same statement has run.
    await t.db.execute(
      sql.raw(`CREATE FUNCTION doomed_insert() RETURNS trigger LANGUAGE plpgsql AS
                 $$ BEGIN RAISE EXCEPTION 'injected enqueue failure'; END $$;
               CREATE TRIGGER doomed BEFORE INSERT ON work_items FOR EACH ROW EXECUTE FUNCTION doomed_insert()`),
    );
    try {
      const res = await p.api.call('POST', `${PLATFORM}/work`, {
        key: p.key,
        body: { environment_id: p.env.environmentId, session_id: 'doomed-session', kind: 'model_turn' },
      });
      expect(await errorType(res, 500)).toBe('api_error');
      expect(await boundTo(t.db, 'doomed-session')).toEqual([]);
      expect(await countWork(t.db)).toBe(0);
    } finally {
      await t.db.execute(sql.raw('DROP TRIGGER doomed ON work_items; DROP FUNCTION doomed_insert()'));
    }
  });
});

describe('the platform lane binding ids of deleted sessions, on real PostgreSQL connections', () => {
  const t = useTestDb('pg', { poolSize: 20 });

  it('enqueues binding ids whose purges housekeeping takes at the same time: each session is bound with its purge cancelled, or refused (503) with its purge taken', async () => {
    const { environmentId } = await setupSession(t.db, 'cloud');
    for (let round = 0; round < 6; round++) {
      const ids = Array.from({ length: 40 }, (_, i) => `sesn_race_${round}_${i}`);
      await t.db.execute(
        sql`INSERT INTO journal_purges (run_id, requested_at)
            SELECT jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb), now() - interval '3 hours'`,
      );
      const taken = new Set<string>();
      const [outcomes] = await Promise.all([
        Promise.all(
          ids.map((sessionId) =>
            bindAndEnqueue(t.db, { environmentId, sessionId, kind: 'model_turn' }).then(
              () => 'queued',
              (err: Error) => (err instanceof ApiError && err.status === 503 ? 'refused' : err.message),
            ),
          ),
        ),
        (async () => {
          for (;;) {
            const claims = await claimJournalPurges(t.db, JOURNAL_PURGE_GRACE_MS, 60_000, 3);
            if (claims.length === 0) return;
            for (const c of claims) taken.add(c.runId);
          }
        })(),
      ]);
      const state = await rows<{ id: string; held: boolean; bound: boolean; items: number }>(
        t.db,
        sql`SELECT i.id, EXISTS (SELECT 1 FROM journal_purges p WHERE p.run_id = i.id) AS held,
                   EXISTS (SELECT 1 FROM sessions s WHERE s.id = i.id) AS bound,
                   (SELECT count(*) FROM work_items w WHERE w.session_id = i.id)::int AS items
              FROM jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb) AS i(id) ORDER BY i.id`,
      );
      const byId = new Map(ids.map((id, i) => [id, outcomes[i]]));
      for (const s of state) {
        // Never both: a session that exists while its id's purge runs would lose its journal.
        expect({ ...s, outcome: byId.get(s.id) }).toEqual(
          taken.has(s.id)
            ? { id: s.id, held: true, bound: false, items: 0, outcome: 'refused' }
            : { id: s.id, held: false, bound: true, items: 1, outcome: 'queued' },
        );
      }
    }
  });
});
