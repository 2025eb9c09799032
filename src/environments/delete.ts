import { sql } from 'drizzle-orm';
import { PG_FOREIGN_KEY_VIOLATION, pgCode } from '../db/errors.js';
import { maybeRow, type SqlHandle } from '../db/handle.js';

export type DeleteOutcome = 'deleted' | 'not_found' | 'has_sessions';

/**
 * Deletes an environment that has no sessions, cascading to its worker polls, environment
 * keys, queue samples and healthchecks (its only work items: every other item belongs to one
 * of its sessions). Sessions are bound to their environment for life (no cascade), so one that
 * still has sessions stays: `has_sessions`. A session inserted concurrently makes the
 * foreign key refuse the delete, which is the same answer.
 */
export async function deleteEnvironment(db: SqlHandle, id: string): Promise<DeleteOutcome> {
  try {
    const deleted = await maybeRow(
      db,
      sql`DELETE FROM environments e
           WHERE e.id = ${id} AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.environment_id = e.id)
       RETURNING 1 AS ok`,
    );
    if (deleted) return 'deleted';
  } catch (err) {
    if (pgCode(err) === PG_FOREIGN_KEY_VIOLATION) return 'has_sessions';
    throw err;
  }
  const exists = await maybeRow(db, sql`SELECT 1 AS ok FROM environments WHERE id = ${id}`);
  return exists ? 'has_sessions' : 'not_found';
}
