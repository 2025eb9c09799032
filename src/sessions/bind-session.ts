/**
 * Session binding: a session id comes from the platform, opaque, and is bound to one
 * environment for life on first use. Every work item of the session then lives in that
 * environment (work_items' composite foreign key holds the pair to the binding).
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
  | { status: 'environment_missing' };

interface BindRow {
  environmentExists: boolean;
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
    if (row.created) return { status: 'bound', created: true };
    if (row.boundTo === environmentId) return { status: 'bound', created: false };
    if (row.boundTo !== null) return { status: 'bound_elsewhere' };
  }
  throw new Error(`bindSession ${sessionId}: the binding kept changing under the insert`);
}

async function insertOrRead(db: SqlHandle, sessionId: string, environmentId: string): Promise<BindRow> {
  try {
    const row = await maybeRow<BindRow>(
      db,
      sql`WITH env AS (SELECT id FROM environments WHERE id = ${environmentId}),
      ins AS (
        INSERT INTO sessions (id, environment_id)
        SELECT ${sessionId}, env.id FROM env
        ON CONFLICT (id) DO NOTHING
        RETURNING 1
      )
      SELECT EXISTS (SELECT 1 FROM env) AS "environmentExists",
             EXISTS (SELECT 1 FROM ins) AS created,
             (SELECT environment_id FROM sessions WHERE id = ${sessionId}) AS "boundTo"`,
    );
    return row!;
  } catch (err) {
    // The environment was deleted between the CTE's read and the insert's key check.
    if (pgCode(err) === PG_FOREIGN_KEY_VIOLATION) {
      return { environmentExists: false, created: false, boundTo: null };
    }
    throw err;
  }
}
