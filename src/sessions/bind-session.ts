/**
 * Session binding: a session id comes from the platform, opaque, and is bound to one
 * environment for life on first use. Every work item of the session then lives in that
 * environment (work_items' composite foreign key holds the pair to the binding).
 *
 * A platform session can be deleted by retention and its id come back. Its journal run (the
 * run is the session) is purged by housekeeping after the deletion, so a new binding must
 * never begin while that purge is under way, or the purge could erase the new run's first
 * records. Binding locks the purge's row: a housekeeping run takes purges with FOR UPDATE
 * SKIP LOCKED, so it passes over one a binding holds; a binding that meets a purge already
 * taken waits for that statement, reads its hold and refuses. A purge not yet taken is
 * cancelled by the binding that creates the session — the session came back, and its journal
 * with it. Cancelled, not left pending: a housekeeping statement whose snapshot predates the
 * binding's commit would not see the new session and would take the purge. (A binding that
 * waited on the deletion itself cannot see the purge that deletion wrote, and leaves it
 * pending behind the session: housekeeping passes over the purge of a run whose session
 * exists, and the grace keeps it from being taken for hours anyway.)
 */
import { sql } from 'drizzle-orm';
import { PG_FOREIGN_KEY_VIOLATION, pgCode } from '../db/errors.js';
import { maybeRow, type SqlHandle } from '../db/handle.js';

export type BindOutcome =
  /** The session is this environment's: `created` when this call bound it. */
  | { status: 'bound'; created: boolean }
  /** The session already belongs to another environment; nothing was written. */
  | { status: 'bound_elsewhere' }
  /** No such environment; nothing was written. */
  | { status: 'environment_missing' }
  /**
   * Unbound, and the journal run of a deleted session of this id is being purged right now:
   * nothing was written; binding is possible again once the purge is done (seconds; the
   * purge's hold at most).
   */
  | { status: 'purging' };

interface BindRow {
  environmentExists: boolean;
  purging: boolean;
  created: boolean;
  boundTo: string | null;
}

/**
 * Binds `sessionId` to `environmentId` unless it is bound already, and says which of the
 * three outcomes happened. One statement in every ordinary case; an unknown environment is
 * reported before a binding elsewhere (the request names nothing that exists). Runs on the
 * handle it is given, so inside a transaction the binding commits only with the caller's
 * writes.
 */
export async function bindSession(
  db: SqlHandle,
  sessionId: string,
  environmentId: string,
): Promise<BindOutcome> {
  // A binding committed by a concurrent transaction after this statement's snapshot makes the
  // insert do nothing *and* stays invisible to the same statement's read; the next statement
  // sees it, so one retry settles it (a second is only for a session deleted in between).
  for (let attempt = 0; attempt < 3; attempt++) {
    const row = await insertOrRead(db, sessionId, environmentId);
    if (!row.environmentExists) return { status: 'environment_missing' };
    if (row.purging) return { status: 'purging' };
    if (row.created) return { status: 'bound', created: true };
    if (row.boundTo === environmentId) return { status: 'bound', created: false };
    if (row.boundTo !== null) return { status: 'bound_elsewhere' };
  }
  throw new Error(`bindSession ${sessionId}: the binding kept changing under the insert`);
}

/**
 * `ON CONFLICT DO NOTHING` names no arbiter, so every unique key of `sessions` is one. The
 * (id, environment_id) key that work_items' foreign key references is a second key on the
 * id: with only the primary key as arbiter, a racing first bind of the same pair could meet
 * its twin on that key and fail (23505) instead of doing nothing.
 */
async function insertOrRead(db: SqlHandle, sessionId: string, environmentId: string): Promise<BindRow> {
  try {
    const row = await maybeRow<BindRow>(
      db,
      sql`WITH env AS (SELECT id FROM environments WHERE id = ${environmentId}),
      purge AS MATERIALIZED (SELECT claimed_until FROM journal_purges WHERE run_id = ${sessionId} FOR UPDATE),
      purging AS (SELECT EXISTS (SELECT 1 FROM purge WHERE claimed_until > now()) AS yes),
      ins AS (
        INSERT INTO sessions (id, environment_id)
        SELECT ${sessionId}, env.id FROM env, purging WHERE NOT purging.yes
        ON CONFLICT DO NOTHING
        RETURNING 1
      ),
      cancel AS (DELETE FROM journal_purges WHERE run_id = ${sessionId} AND EXISTS (SELECT 1 FROM ins)),
      bound AS (SELECT environment_id FROM sessions WHERE id = ${sessionId})
      SELECT EXISTS (SELECT 1 FROM env) AS "environmentExists",
             EXISTS (SELECT 1 FROM ins) AS created,
             (SELECT environment_id FROM bound) AS "boundTo",
             (SELECT yes FROM purging) AND NOT EXISTS (SELECT 1 FROM bound) AS purging`,
    );
    return row!;
  } catch (err) {
    // The environment was deleted between the CTE's read and the insert's key check.
    if (pgCode(err) === PG_FOREIGN_KEY_VIOLATION) {
      return { environmentExists: false, purging: false, created: false, boundTo: null };
    }
    throw err;
  }
}
