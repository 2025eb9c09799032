import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { rows, type SqlHandle } from '../../src/db/handle.js';
import { runOnce } from '../../src/housekeeping/index.js';
import { newId } from '../../src/ids.js';
import { environmentHealthchecks, retireStoppedWork } from '../../src/queue/index.js';
import {
  appendEvents,
  deleteSession,
  recordCalls,
  retireArchivedSessions,
} from '../../src/sessions/index.js';
import { useTestDb } from '../helpers/db.js';
import { createEnvironment, createSession, insertWork, setupSession } from '../helpers/factories.js';
import { apiSession } from '../helpers/sessions.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const WEEK = 7 * DAY;

/** Moves the items' stop (and every other stamp) `ms` into the past, whatever their state. */
async function backdate(db: SqlHandle, ids: string[], ms: number): Promise<void> {
  await db.execute(
    sql`UPDATE work_items
           SET stopped_at = now() - ${ms}::double precision * interval '1 millisecond',
               created_at = now() - ${ms + 1}::double precision * interval '1 millisecond',
               updated_at = now() - ${ms}::double precision * interval '1 millisecond'
         WHERE id IN (SELECT jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))`,
  );
}

async function workIds(db: SqlHandle): Promise<string[]> {
  return (await rows<{ id: string }>(db, sql`SELECT id FROM work_items ORDER BY id`)).map((r) => r.id);
}

async function count(db: SqlHandle, table: string): Promise<number> {
  const [row] = await rows<{ n: number }>(db, sql`SELECT count(*)::int AS n FROM ${sql.raw(table)}`);
  return row!.n;
}

/** A stopped healthcheck of the environment, answered `ackedAgoMs` ago (null: never), stopped 30 days ago. */
async function stoppedHealthcheck(db: SqlHandle, environmentId: string, ackedAgoMs: number | null) {
  const id = newId('work');
  await db.execute(
    sql`INSERT INTO work_items (id, environment_id, kind, lane, state, data_type, healthcheck_id,
                                healthcheck_environment_id, acknowledged_at, stopped_at)
        VALUES (${id}, ${environmentId}, 'tool_exec', 'poll', 'stopped', 'healthcheck', ${newId('hc')},
                ${environmentId},
                CASE WHEN ${ackedAgoMs}::double precision IS NULL THEN NULL
                     ELSE now() - ${ackedAgoMs}::double precision * interval '1 millisecond' END,
                now() - interval '30 days')`,
  );
  return id;
}

/** An API session with `events` events in its log and one tool call, archived `archivedAgoMs` ago (null: not archived). */
async function sessionWithLog(
  db: SqlHandle,
  events: number,
  archivedAgoMs: number | null,
  environmentId?: string,
): Promise<string> {
  const { sessionId } = await apiSession(db, environmentId ? { environmentId } : {});
  const appended = await appendEvents(
    db,
    sessionId,
    Array.from({ length: events }, (_, i) => ({ type: 'user.message', body: { i } })),
  );
  await recordCalls(db, sessionId, [
    { eventId: appended![0]!.id, modelToolUseId: 'toolu_1', custom: false, name: 'bash', requestedSeq: 1 },
  ]);
  // Old activity too: only archival may make a session due, never the age of its log.
  await db.execute(
    sql`UPDATE session_events SET processed_at = now() - interval '400 days' WHERE session_id = ${sessionId}`,
  );
  if (archivedAgoMs !== null) {
    await db.execute(
      sql`UPDATE sessions
             SET archived_at = now() - ${archivedAgoMs}::double precision * interval '1 millisecond',
                 created_at = now() - interval '400 days'
           WHERE id = ${sessionId}`,
    );
  }
  return sessionId;
}

async function logOf(
  db: SqlHandle,
  sessionId: string,
): Promise<{ events: number; calls: number; work: number }> {
  const [row] = await rows<{ events: number; calls: number; work: number }>(
    db,
    sql`SELECT (SELECT count(*) FROM session_events WHERE session_id = ${sessionId})::int AS events,
               (SELECT count(*) FROM session_tool_calls WHERE session_id = ${sessionId})::int AS calls,
               (SELECT count(*) FROM work_items WHERE session_id = ${sessionId})::int AS work`,
  );
  return row!;
}

async function sessionIds(db: SqlHandle): Promise<string[]> {
  return (await rows<{ id: string }>(db, sql`SELECT id FROM sessions ORDER BY id`)).map((r) => r.id);
}

async function purgeRequests(db: SqlHandle): Promise<string[]> {
  return (await rows<{ id: string }>(db, sql`SELECT run_id AS id FROM journal_purges ORDER BY run_id`)).map(
    (r) => r.id,
  );
}

describe.each(['pg', 'pglite'] as const)('retention (%s)', (driver) => {
  const t = useTestDb(driver);

  it('stopped items older than the retention are deleted; younger stopped items and live items of any age never', async () => {
    const target = await setupSession(t.db);
    const old = await insertWork(t.db, target, { state: 'stopped', count: 3 });
    const young = await insertWork(t.db, target, { state: 'stopped', count: 2 });
    const live: string[] = [];
    for (const state of ['queued', 'starting', 'active', 'stopping'] as const) {
      live.push(...(await insertWork(t.db, target, { kind: 'web_exec', state, leaseInMs: 60_000 })));
      // Another session, so the live slot of (session, kind) is free for the next state.
      target.sessionId = await createSession(t.db, target.environmentId);
    }
    await backdate(t.db, [...old, ...live], WEEK + HOUR);
    await backdate(t.db, young, WEEK - HOUR);

    expect(await retireStoppedWork(t.db, { retainStoppedWorkMs: WEEK })).toBe(3);
    expect(await workIds(t.db)).toEqual([...young, ...live].sort());
    expect(await retireStoppedWork(t.db, { retainStoppedWorkMs: WEEK })).toBe(0);
  });

  it('a retention of 0 keeps every stopped item', async () => {
    const target = await setupSession(t.db);
    const ids = await insertWork(t.db, target, { state: 'stopped', count: 2 });
    await backdate(t.db, ids, 1_000 * DAY);
    expect(await retireStoppedWork(t.db, { retainStoppedWorkMs: 0 })).toBe(0);
    expect(await workIds(t.db)).toEqual([...ids].sort());
  });

  it("an environment's last answered healthcheck is kept however old; earlier and unanswered ones go", async () => {
    const env = await createEnvironment(t.db);
    const other = await createEnvironment(t.db);
    const earlier = await stoppedHealthcheck(t.db, env, 20 * DAY);
    const last = await stoppedHealthcheck(t.db, env, 10 * DAY);
    const unanswered = await stoppedHealthcheck(t.db, env, null);
    const othersLast = await stoppedHealthcheck(t.db, other, 25 * DAY);

    expect(await retireStoppedWork(t.db, { retainStoppedWorkMs: WEEK })).toBe(2);
    expect(await workIds(t.db)).toEqual([last, othersLast].sort());
    expect((await environmentHealthchecks(t.db, env)).answered?.id).toBe(last);
    expect(await workIds(t.db)).not.toContain(earlier);
    expect(await workIds(t.db)).not.toContain(unanswered);
  });

  it('a run deletes at most batch × maxBatches stopped items, oldest first; the next run goes on', async () => {
    const target = await setupSession(t.db);
    const oldest = await insertWork(t.db, target, { state: 'stopped', count: 4 });
    const rest = await insertWork(t.db, target, { state: 'stopped', count: 3 });
    await backdate(t.db, oldest, 30 * DAY);
    await backdate(t.db, rest, 20 * DAY);
    const bounds = { retainStoppedWorkMs: WEEK, batch: 2, maxBatches: 2 };

    expect(await retireStoppedWork(t.db, bounds)).toBe(4);
    expect(await workIds(t.db)).toEqual([...rest].sort());
    expect(await retireStoppedWork(t.db, bounds)).toBe(3);
    expect(await count(t.db, 'work_items')).toBe(0);
  });

  it('runOnce deletes what is due by the defaults (7 days for stopped items, archived sessions kept) and counts it', async () => {
    const target = await setupSession(t.db);
    const due = await insertWork(t.db, target, { state: 'stopped', count: 2 });
    const kept = await insertWork(t.db, target, { state: 'stopped' });
    await backdate(t.db, due, WEEK + HOUR);
    await backdate(t.db, kept, WEEK - HOUR);
    const archived = await sessionWithLog(t.db, 3, 1_000 * DAY);

    expect(await runOnce({ db: t.db })).toMatchObject({
      deletedWorkItems: 2,
      deletedSessions: 0,
      deletedEvents: 0,
      purgedJournals: 0,
      vacuumed: 0,
    });
    expect(await workIds(t.db)).toEqual(kept);
    expect(await logOf(t.db, archived)).toMatchObject({ events: 3, calls: 1 });
  });

  it('an archived session past its retention goes whole — row, log, tool calls, work — and its journal run is queued for a purge', async () => {
    const gone = await sessionWithLog(t.db, 5, 31 * DAY);
    const env = (
      await rows<{ e: string }>(t.db, sql`SELECT environment_id AS e FROM sessions WHERE id = ${gone}`)
    )[0]!.e;
    await insertWork(t.db, { environmentId: env, sessionId: gone }, { state: 'stopped', count: 2 });
    const youngArchived = await sessionWithLog(t.db, 4, 29 * DAY);
    const live = await sessionWithLog(t.db, 6, null);

    const counts = await runOnce({ db: t.db }, { retainArchivedSessionsMs: 30 * DAY });
    expect(counts).toMatchObject({ deletedSessions: 1, deletedEvents: 5 });
    expect(await sessionIds(t.db)).toEqual([youngArchived, live].sort());
    expect(await logOf(t.db, gone)).toEqual({ events: 0, calls: 0, work: 0 });
    // Every event of a session that still exists is there, however old its log.
    expect(await logOf(t.db, youngArchived)).toEqual({ events: 4, calls: 1, work: 0 });
    expect(await logOf(t.db, live)).toEqual({ events: 6, calls: 1, work: 0 });
    expect(await purgeRequests(t.db)).toEqual([gone]);
  });

  it('an archived session whose work is not all stopped is kept until it is', async () => {
    const sessionId = await sessionWithLog(t.db, 2, 90 * DAY);
    const env = (
      await rows<{ e: string }>(t.db, sql`SELECT environment_id AS e FROM sessions WHERE id = ${sessionId}`)
    )[0]!.e;
    const [item] = await insertWork(
      t.db,
      { environmentId: env, sessionId },
      { kind: 'model_turn', state: 'active', leaseInMs: 60_000 },
    );
    const options = { retainArchivedSessionsMs: 30 * DAY };

    expect(await retireArchivedSessions(t.db, options)).toEqual({ sessions: 0, events: 0 });
    expect(await logOf(t.db, sessionId)).toEqual({ events: 2, calls: 1, work: 1 });
    await t.db.execute(sql`UPDATE work_items SET state = 'stopped', stopped_at = now() WHERE id = ${item!}`);
    expect(await retireArchivedSessions(t.db, options)).toEqual({ sessions: 1, events: 2 });
    expect(await sessionIds(t.db)).toEqual([]);
  });

  it('archived sessions are kept by default (retention 0)', async () => {
    const sessionId = await sessionWithLog(t.db, 2, 3_000 * DAY);
    expect(await retireArchivedSessions(t.db)).toEqual({ sessions: 0, events: 0 });
    expect(await logOf(t.db, sessionId)).toMatchObject({ events: 2 });
  });

  it('a statement takes whole sessions while their rows fit the batch, a larger one alone; the run goes on up to maxBatches', async () => {
    // Oldest archival first: a (3 events), b (3), c (20), d (1).
    const a = await sessionWithLog(t.db, 3, 40 * DAY);
    const b = await sessionWithLog(t.db, 3, 39 * DAY);
    const c = await sessionWithLog(t.db, 20, 38 * DAY);
    const d = await sessionWithLog(t.db, 1, 37 * DAY);
    const bounds = { retainArchivedSessionsMs: 30 * DAY, batch: 10, maxBatches: 1 };

    // a and b: 2 × (3 events + the row) = 8 ≤ 10; c would make 29.
    expect(await retireArchivedSessions(t.db, bounds)).toEqual({ sessions: 2, events: 6 });
    expect(await sessionIds(t.db)).toEqual([c, d].sort());
    // c alone is over the budget: it goes by itself, whole.
    expect(await retireArchivedSessions(t.db, bounds)).toEqual({ sessions: 1, events: 20 });
    expect(await retireArchivedSessions(t.db, { ...bounds, maxBatches: 5 })).toEqual({
      sessions: 1,
      events: 1,
    });
    expect(await sessionIds(t.db)).toEqual([]);
    expect(await purgeRequests(t.db)).toEqual([a, b, c, d].sort());
  });

  it('deleting a session through the API queues its journal run for a purge in the same statement', async () => {
    const sessionId = await sessionWithLog(t.db, 2, null);
    expect(await deleteSession(t.db, sessionId)).toBe(true);
    expect(await purgeRequests(t.db)).toEqual([sessionId]);
    expect(await deleteSession(t.db, sessionId)).toBe(false);
    expect(await purgeRequests(t.db)).toEqual([sessionId]);
  });
});

describe('retention on real PostgreSQL connections', () => {
  const t = useTestDb('pg', { poolSize: 20 });

  it('overlapping runs never fail nor double count: together they delete every due stopped item once', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push(...(await insertWork(t.db, await setupSession(t.db), { state: 'stopped', count: 150 })));
    }
    const young = await insertWork(t.db, await setupSession(t.db), { state: 'stopped', count: 5 });
    await backdate(t.db, ids, 8 * DAY);
    const counts = await Promise.all(
      Array.from({ length: 6 }, () =>
        retireStoppedWork(t.db, { retainStoppedWorkMs: WEEK, batch: 10, maxBatches: 1_000 }),
      ),
    );
    expect(counts.reduce((a, b) => a + b, 0)).toBe(450);
    expect(await workIds(t.db)).toEqual([...young].sort());
  });

  it('overlapping runs delete every due archived session once, and their sessions and events add up', async () => {
    const env = await createEnvironment(t.db);
    const due: string[] = [];
    for (let i = 0; i < 30; i++) due.push(await sessionWithLog(t.db, 1 + (i % 4), 60 * DAY, env));
    const kept = await sessionWithLog(t.db, 2, null, env);
    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        retireArchivedSessions(t.db, { retainArchivedSessionsMs: 30 * DAY, batch: 6, maxBatches: 1_000 }),
      ),
    );
    expect(results.reduce((a, r) => a + r.sessions, 0)).toBe(30);
    // 30 sessions of 1, 2, 3, 4, 1, 2 … events: 7 × 10 + 1 + 2.
    expect(results.reduce((a, r) => a + r.events, 0)).toBe(73);
    expect(await sessionIds(t.db)).toEqual([kept]);
    expect(await purgeRequests(t.db)).toEqual([...due].sort());
  });

  it('an archived session whose row an append holds is passed over, not waited for, and taken by the next run', async () => {
    const sessionId = await sessionWithLog(t.db, 2, 60 * DAY);
    await sessionWithLog(t.db, 1, 60 * DAY);
    const client = await t.pool!.connect();
    try {
      // What an append in flight holds: the session row, until its transaction ends.
      await client.query('BEGIN');
      await client.query('SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE', [sessionId]);
      const options = { retainArchivedSessionsMs: 30 * DAY };
      expect(await retireArchivedSessions(t.db, options)).toEqual({ sessions: 1, events: 1 });
      expect(await sessionIds(t.db)).toEqual([sessionId]);
      expect(await logOf(t.db, sessionId)).toMatchObject({ events: 2, calls: 1 });
      await client.query('COMMIT');
      expect(await retireArchivedSessions(t.db, options)).toEqual({ sessions: 1, events: 2 });
      expect(await sessionIds(t.db)).toEqual([]);
    } finally {
      client.release();
    }
  });
});
