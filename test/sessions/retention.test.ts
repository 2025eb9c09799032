import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { bindAndEnqueue } from '../../src/api/routes/platform-enqueue.js';
import { type Database, rows, type SqlHandle } from '../../src/db/handle.js';
import { runOnce } from '../../src/housekeeping/index.js';
import { retireStoppedWork } from '../../src/queue/index.js';
import { retireEmptyPlatformSessions } from '../../src/sessions/index.js';
import { useTestDb } from '../helpers/db.js';
import { createEnvironment, createSession, insertWork } from '../helpers/factories.js';
import { apiSession } from '../helpers/sessions.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const WEEK = 7 * DAY;
const RETENTION = { retainStoppedWorkMs: WEEK, retainEmptyPlatformSessionsMs: 30 * DAY };

const ago = (ms: number) => sql`now() - ${ms}::double precision * interval '1 millisecond'`;

/** Stops every item of the sessions `ms` ago. */
async function stopAll(db: SqlHandle, sessionIds: string[], ms: number): Promise<void> {
  await db.execute(
    sql`UPDATE work_items SET state = 'stopped', stop_requested_at = ${ago(ms)}, stopped_at = ${ago(ms)}
         WHERE session_id IN (SELECT jsonb_array_elements_text(${JSON.stringify(sessionIds)}::jsonb))`,
  );
}

async function emptiedAgo(db: SqlHandle, sessionIds: string[], ms: number): Promise<void> {
  await db.execute(
    sql`UPDATE sessions SET emptied_at = ${ago(ms)}
         WHERE id IN (SELECT jsonb_array_elements_text(${JSON.stringify(sessionIds)}::jsonb))`,
  );
}

async function sessionRows(db: SqlHandle): Promise<{ id: string; emptied: boolean }[]> {
  return rows(db, sql`SELECT id, emptied_at IS NOT NULL AS emptied FROM sessions ORDER BY id`);
}

async function purges(db: SqlHandle): Promise<string[]> {
  const found = await rows<{ id: string }>(db, sql`SELECT run_id AS id FROM journal_purges ORDER BY run_id`);
  return found.map((r) => r.id);
}

/** A platform-lane session (named by the caller, bound by its first enqueue) with one item. */
async function platformSession(db: Database, environmentId: string, sessionId: string): Promise<string> {
  const { work } = await bindAndEnqueue(db, { environmentId, sessionId, kind: 'model_turn' });
  return work.id;
}

describe.each(['pg', 'pglite'] as const)('retention of platform-lane sessions (%s)', (driver) => {
  const t = useTestDb(driver);

  it('a platform session is stamped emptied when the retention deletes its last item, not while any item is left', async () => {
    const env = await createEnvironment(t.db, 'cloud');
    await platformSession(t.db, env, 'plat-a');
    await insertWork(
      t.db,
      { environmentId: env, sessionId: 'plat-a' },
      { kind: 'web_exec', state: 'stopped' },
    );
    await stopAll(t.db, ['plat-a'], WEEK + HOUR);
    await t.db.execute(sql`UPDATE work_items SET stopped_at = ${ago(WEEK - HOUR)} WHERE kind = 'web_exec'`);

    expect(await runOnce({ db: t.db }, RETENTION)).toMatchObject({
      deletedWorkItems: 1,
      deletedPlatformSessions: 0,
    });
    expect(await sessionRows(t.db)).toEqual([{ id: 'plat-a', emptied: false }]);

    await stopAll(t.db, ['plat-a'], WEEK + HOUR);
    expect(await runOnce({ db: t.db }, RETENTION)).toMatchObject({
      deletedWorkItems: 1,
      deletedPlatformSessions: 0,
    });
    expect(await sessionRows(t.db)).toEqual([{ id: 'plat-a', emptied: true }]);
  });

  it('the statement deleting the last items of a session stamps it, so a run cut short after that commit leaves none unstamped', async () => {
    const env = await createEnvironment(t.db, 'cloud');
    await platformSession(t.db, env, 'plat-cut');
    await platformSession(t.db, env, 'plat-left');
    await insertWork(t.db, { environmentId: env, sessionId: 'plat-left' }, { kind: 'web_exec' });
    await stopAll(t.db, ['plat-cut'], WEEK + HOUR);
    await t.db.execute(
      sql`UPDATE work_items SET state = 'stopped', stopped_at = ${ago(WEEK + HOUR)}
           WHERE session_id = 'plat-left' AND kind = 'model_turn'`,
    );
    // Only the queue's step: the run ends here, before the sessions' own step looks at them.
    expect(await retireStoppedWork(t.db, RETENTION)).toBe(2);
    expect(await sessionRows(t.db)).toEqual([
      { id: 'plat-cut', emptied: true },
      { id: 'plat-left', emptied: false },
    ]);
  });

  it('an API session losing its items to the retention is never stamped: archival decides its end', async () => {
    const { sessionId } = await apiSession(t.db);
    const env = (await rows<{ e: string }>(t.db, sql`SELECT environment_id AS e FROM sessions`))[0]!.e;
    await insertWork(t.db, { environmentId: env, sessionId }, { state: 'stopped' });
    await stopAll(t.db, [sessionId], WEEK + HOUR);
    expect(await runOnce({ db: t.db }, RETENTION)).toMatchObject({ deletedWorkItems: 1 });
    expect(await sessionRows(t.db)).toEqual([{ id: sessionId, emptied: false }]);
  });

  it('a session emptied longer ago than the retention is deleted and its journal run queued; one emptied since is kept', async () => {
    const env = await createEnvironment(t.db, 'cloud');
    const [due, young, full] = [
      await createSession(t.db, env),
      await createSession(t.db, env),
      await createSession(t.db, env),
    ];
    await insertWork(t.db, { environmentId: env, sessionId: full }, { state: 'stopped' });
    await emptiedAgo(t.db, [due!], 30 * DAY + HOUR);
    await emptiedAgo(t.db, [young!], 30 * DAY - HOUR);

    expect(await runOnce({ db: t.db }, RETENTION)).toMatchObject({ deletedPlatformSessions: 1 });
    expect((await sessionRows(t.db)).map((s) => s.id)).toEqual([young, full].sort());
    expect(await purges(t.db)).toEqual([due]);
  });

  it('a retention of 0 (the default) keeps emptied sessions however old, and still stamps them', async () => {
    const env = await createEnvironment(t.db, 'cloud');
    await platformSession(t.db, env, 'plat-keep');
    await stopAll(t.db, ['plat-keep'], WEEK + HOUR);
    expect(await runOnce({ db: t.db })).toMatchObject({ deletedWorkItems: 1, deletedPlatformSessions: 0 });
    await emptiedAgo(t.db, ['plat-keep'], 1_000 * DAY);
    expect(await runOnce({ db: t.db })).toMatchObject({ deletedPlatformSessions: 0 });
    expect(await sessionRows(t.db)).toEqual([{ id: 'plat-keep', emptied: true }]);
  });

  it('a session that got work after it was stamped is kept and unstamped; stamped again when that work is retired', async () => {
    const env = await createEnvironment(t.db, 'cloud');
    const sessionId = await createSession(t.db, env);
    await emptiedAgo(t.db, [sessionId], 30 * DAY + HOUR);
    const item = await platformSession(t.db, env, sessionId);

    expect(await runOnce({ db: t.db }, RETENTION)).toMatchObject({ deletedPlatformSessions: 0 });
    expect(await sessionRows(t.db)).toEqual([{ id: sessionId, emptied: false }]);
    expect((await rows(t.db, sql`SELECT id FROM work_items`)).length).toBe(1);

    await stopAll(t.db, [sessionId], WEEK + HOUR);
    expect(await runOnce({ db: t.db }, RETENTION)).toMatchObject({ deletedWorkItems: 1 });
    expect(await sessionRows(t.db)).toEqual([{ id: sessionId, emptied: true }]);
    expect(item).toMatch(/^work_/);
  });

  it('the platform can come back to a deleted session: its next enqueue binds it anew and cancels the pending purge', async () => {
    const first = await createEnvironment(t.db, 'cloud');
    const second = await createEnvironment(t.db, 'cloud');
    const sessionId = await createSession(t.db, first);
    await emptiedAgo(t.db, [sessionId], 30 * DAY + HOUR);
    expect(await runOnce({ db: t.db }, RETENTION)).toMatchObject({ deletedPlatformSessions: 1 });

    // Bound for life means for the session's life: the id may now go to another environment.
    await platformSession(t.db, second, sessionId);
    expect(
      await rows(
        t.db,
        sql`SELECT environment_id AS e, emptied_at IS NULL AS fresh FROM sessions WHERE id = ${sessionId}`,
      ),
    ).toEqual([{ e: second, fresh: true }]);
    expect(await purges(t.db)).toEqual([]);
  });

  it('a run deletes at most batch × maxBatches sessions, the longest emptied first; the next run goes on', async () => {
    const env = await createEnvironment(t.db, 'cloud');
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const id = await createSession(t.db, env);
      await emptiedAgo(t.db, [id], 40 * DAY - i * HOUR);
      ids.push(id);
    }
    const bounds = { ...RETENTION, batch: 2, maxBatches: 2 };
    expect(await retireEmptyPlatformSessions(t.db, new Set(), bounds)).toBe(4);
    expect((await sessionRows(t.db)).map((s) => s.id)).toEqual(ids.slice(4).sort());
    expect(await retireEmptyPlatformSessions(t.db, new Set(), bounds)).toBe(3);
    expect(await purges(t.db)).toEqual([...ids].sort());
  });
});

describe('retention of platform-lane sessions under concurrency (pg)', () => {
  const t = useTestDb('pg', { poolSize: 24 });

  it('overlapping runs delete every due session once, and their counts add up', async () => {
    const env = await createEnvironment(t.db, 'cloud');
    const ids: string[] = [];
    for (let i = 0; i < 120; i++) ids.push(await createSession(t.db, env));
    await emptiedAgo(t.db, ids, 30 * DAY + HOUR);
    const runs = await Promise.all(
      Array.from({ length: 6 }, () =>
        retireEmptyPlatformSessions(t.db, new Set(), { ...RETENTION, batch: 7, maxBatches: 1_000 }),
      ),
    );
    expect(runs.reduce((a, b) => a + b, 0)).toBe(120);
    expect(await sessionRows(t.db)).toEqual([]);
    expect((await purges(t.db)).length).toBe(120);
  });

  it('two runs deleting the last items of one session at once leave it stamped', async () => {
    const env = await createEnvironment(t.db, 'cloud');
    const sessionIds: string[] = [];
    for (let i = 0; i < 40; i++) {
      const sessionId = await createSession(t.db, env);
      await insertWork(t.db, { environmentId: env, sessionId }, { state: 'stopped', count: 6 });
      sessionIds.push(sessionId);
    }
    await stopAll(t.db, sessionIds, WEEK + HOUR);
    // Small batches, so each session's items are spread over both runs' statements.
    await Promise.all(
      Array.from({ length: 2 }, () => runOnce({ db: t.db }, { ...RETENTION, batch: 5, maxBatches: 1_000 })),
    );
    expect((await rows(t.db, sql`SELECT id FROM work_items`)).length).toBe(0);
    expect((await sessionRows(t.db)).filter((s) => !s.emptied)).toEqual([]);
  });

  it('an enqueue racing the deletion is never lost: its item lives in the kept session or in the session bound anew', async () => {
    const env = await createEnvironment(t.db, 'cloud');
    const ids: string[] = [];
    for (let i = 0; i < 200; i++) ids.push(await createSession(t.db, env));
    for (let round = 0; round < 8; round++) {
      await emptiedAgo(t.db, ids, 30 * DAY + HOUR);
      const created: string[] = [];
      const enqueues = ids.map(async (sessionId, i) => {
        // Spread over the deletion's run, not all before it.
        if (i % 4 === 0) await new Promise((r) => setImmediate(r));
        // As the platform lane's enqueue does: one statement, and a binding of its own when
        // that statement found the session gone.
        const { work } = await bindAndEnqueue(t.db, { environmentId: env, sessionId, kind: 'model_turn' });
        created.push(work.id);
      });
      await Promise.all([
        ...enqueues,
        retireEmptyPlatformSessions(t.db, new Set(), { ...RETENTION, batch: 50, maxBatches: 1_000 }),
      ]);
      const stored = await rows<{ id: string; bound: boolean }>(
        t.db,
        sql`SELECT w.id, EXISTS (SELECT 1 FROM sessions s WHERE s.id = w.session_id) AS bound
              FROM work_items w`,
      );
      expect(stored.map((w) => w.id).sort()).toEqual([...created].sort());
      expect(stored.every((w) => w.bound)).toBe(true);
      await t.db.execute(sql`DELETE FROM work_items`);
      await t.db.execute(sql`DELETE FROM journal_purges`);
      await t.db.execute(
        sql`INSERT INTO sessions (id, environment_id)
            SELECT jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb), ${env}
            ON CONFLICT (id) DO NOTHING`,
      );
    }
  });
});
