import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { maybeRow, rows, type SqlHandle } from '../../src/db/handle.js';
import { newId } from '../../src/ids.js';
import { claimJournalPurges } from '../../src/sessions/claim-journal-purges.js';
import { bindSession, JOURNAL_PURGE_GRACE_MS } from '../../src/sessions/index.js';
import { useTestDb } from '../helpers/db.js';
import { createEnvironment } from '../helpers/factories.js';

let n = 0;
const freshSessionId = () => `sess_bind_${++n}_${Math.random().toString(36).slice(2, 8)}`;

/** A deleted session's purge of `runId`, due now, held by a housekeeping run when `held`. */
async function pendingPurge(db: SqlHandle, runId: string, held: boolean): Promise<void> {
  await db.execute(
    sql`INSERT INTO journal_purges (run_id, requested_at, claimed_until)
        VALUES (${runId}, now() - interval '3 hours', CASE WHEN ${held} THEN now() + interval '5 minutes' END)`,
  );
}

async function purgeHeld(db: SqlHandle, runId: string): Promise<boolean | null> {
  const row = await maybeRow<{ held: boolean }>(
    db,
    sql`SELECT claimed_until > now() AS held FROM journal_purges WHERE run_id = ${runId}`,
  );
  return row === null ? null : row.held === true;
}

async function bindings(db: SqlHandle, sessionId: string): Promise<string[]> {
  const found = await rows<{ environmentId: string }>(
    db,
    sql`SELECT environment_id AS "environmentId" FROM sessions WHERE id = ${sessionId}`,
  );
  return found.map((r) => r.environmentId);
}

describe.each(['pg', 'pglite'] as const)('bindSession (%s)', (driver) => {
  const t = useTestDb(driver);

  it('binds an unseen session to the environment and says it created the binding', async () => {
    const env = await createEnvironment(t.db);
    const session = freshSessionId();
    expect(await bindSession(t.db, session, env)).toEqual({ status: 'bound', created: true });
    expect(await bindings(t.db, session)).toEqual([env]);
  });

  it('binding again to the same environment is bound and not created', async () => {
    const env = await createEnvironment(t.db);
    const session = freshSessionId();
    await bindSession(t.db, session, env);
    expect(await bindSession(t.db, session, env)).toEqual({ status: 'bound', created: false });
    expect(await bindings(t.db, session)).toEqual([env]);
  });

  it('a session bound elsewhere stays bound there and is reported bound_elsewhere', async () => {
    const first = await createEnvironment(t.db);
    const second = await createEnvironment(t.db, 'cloud');
    const session = freshSessionId();
    await bindSession(t.db, session, first);
    expect(await bindSession(t.db, session, second)).toEqual({ status: 'bound_elsewhere' });
    expect(await bindings(t.db, session)).toEqual([first]);
  });

  it('an unknown environment is environment_missing and binds nothing, even for a session bound elsewhere', async () => {
    const session = freshSessionId();
    expect(await bindSession(t.db, session, newId('env'))).toEqual({ status: 'environment_missing' });
    expect(await bindings(t.db, session)).toEqual([]);
    const env = await createEnvironment(t.db);
    await bindSession(t.db, session, env);
    expect(await bindSession(t.db, session, newId('env'))).toEqual({ status: 'environment_missing' });
    expect(await bindings(t.db, session)).toEqual([env]);
  });

  it('an id whose old journal run is being purged is refused as purging and nothing is written', async () => {
    const env = await createEnvironment(t.db);
    const session = freshSessionId();
    await pendingPurge(t.db, session, true);
    expect(await bindSession(t.db, session, env)).toEqual({ status: 'purging' });
    expect(await bindings(t.db, session)).toEqual([]);
    expect(await purgeHeld(t.db, session)).toBe(true);
  });

  it('an id whose purge is pending but not taken is bound, and the purge is cancelled: the session came back with its journal', async () => {
    const env = await createEnvironment(t.db);
    const session = freshSessionId();
    await pendingPurge(t.db, session, false);
    expect(await bindSession(t.db, session, env)).toEqual({ status: 'bound', created: true });
    expect(await bindings(t.db, session)).toEqual([env]);
    expect(await purgeHeld(t.db, session)).toBe(null);
    expect(await claimJournalPurges(t.db, JOURNAL_PURGE_GRACE_MS, 60_000, 10)).toEqual([]);
  });

  it('a binding made in a transaction that rolls back does not survive', async () => {
    const env = await createEnvironment(t.db);
    const session = freshSessionId();
    await expect(
      t.db.transaction(async (tx) => {
        expect(await bindSession(tx, session, env)).toEqual({ status: 'bound', created: true });
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await bindings(t.db, session)).toEqual([]);
  });
});

describe('bindSession under concurrency (pg)', () => {
  const t = useTestDb('pg', { poolSize: 20 });

  it('a binding committed while the insert waited on it is seen, not missed', async () => {
    const winner = await createEnvironment(t.db);
    const loser = await createEnvironment(t.db);
    const session = freshSessionId();
    // Another transaction inserts the session and holds it uncommitted, so the bind's insert
    // must wait on it; the binding it then meets postdates the bind's statement snapshot.
    const other = await t.pool!.connect();
    try {
      await other.query('BEGIN');
      await other.query('INSERT INTO sessions (id, environment_id) VALUES ($1, $2)', [session, winner]);
      const pending = bindSession(t.db, session, loser);
      await waitUntilBlocked(t.db, Number((await other.query('SELECT pg_backend_pid() AS pid')).rows[0].pid));
      await other.query('COMMIT');
      expect(await pending).toEqual({ status: 'bound_elsewhere' });
    } finally {
      other.release();
    }
    expect(await bindings(t.db, session)).toEqual([winner]);
  });

  it('binds racing housekeeping for the same purges: each id is either bound with its purge cancelled, or its purge taken and the bind refused', async () => {
    const env = await createEnvironment(t.db);
    for (let round = 0; round < 6; round++) {
      const ids = Array.from({ length: 40 }, freshSessionId);
      for (const id of ids) await pendingPurge(t.db, id, false);
      const taken = new Set<string>();
      const [outcomes] = await Promise.all([
        Promise.all(ids.map((id) => bindSession(t.db, id, env))),
        // Small batches, so the claims interleave with the binds.
        (async () => {
          for (;;) {
            const claims = await claimJournalPurges(t.db, JOURNAL_PURGE_GRACE_MS, 60_000, 3);
            if (claims.length === 0) return;
            for (const c of claims) taken.add(c.runId);
          }
        })(),
      ]);
      for (const [i, id] of ids.entries()) {
        const held = await purgeHeld(t.db, id);
        const bound = await bindings(t.db, id);
        // Never both: a session that exists while its id's purge runs would lose its journal.
        expect({ id, held, bound: bound.length, outcome: outcomes[i]!.status }).toEqual(
          taken.has(id)
            ? { id, held: true, bound: 0, outcome: 'purging' }
            : { id, held: null, bound: 1, outcome: 'bound' },
        );
      }
    }
  });

  it('concurrent first binds of one session to one environment all answer bound, one created: none fails on the (id, environment) key', async () => {
    // Each round races 8 first binds of a new id. The unique (id, environment_id) key backs
    // work_items' composite foreign key; an insert that named only the primary key as its
    // arbiter could meet a racing twin on that second key and fail (23505) instead of doing
    // nothing (a few rounds in a few hundred did, here).
    const env = await createEnvironment(t.db);
    for (let round = 0; round < 200; round++) {
      const session = freshSessionId();
      const outcomes = await Promise.all(Array.from({ length: 8 }, () => bindSession(t.db, session, env)));
      expect(outcomes.filter((o) => o.status === 'bound' && o.created)).toHaveLength(1);
      expect(outcomes.every((o) => o.status === 'bound')).toBe(true);
    }
  });

  it('many concurrent binds of one session to two environments settle on exactly one', async () => {
    const a = await createEnvironment(t.db);
    const b = await createEnvironment(t.db);
    const session = freshSessionId();
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, (_, i) => bindSession(t.db, session, i % 2 ? a : b)),
    );
    const [bound] = await bindings(t.db, session);
    expect(outcomes.filter((o) => o.status === 'bound' && o.created)).toHaveLength(1);
    for (const [i, o] of outcomes.entries()) {
      const env = i % 2 ? a : b;
      expect(o.status).toBe(env === bound ? 'bound' : 'bound_elsewhere');
    }
  });
});

/** Resolves once some backend is waiting on a lock held by `pid` (a signal, not a timeout). */
async function waitUntilBlocked(db: SqlHandle, pid: number): Promise<void> {
  for (;;) {
    const row = await maybeRow<{ n: number }>(
      db,
      sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE ${pid}::int = ANY(pg_blocking_pids(pid))`,
    );
    if (row!.n > 0) return;
  }
}
