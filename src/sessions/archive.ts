import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { SESSION_COLUMNS } from './sql.js';
import type { Session } from './types.js';

/**
 * Archives an API session (idempotent: the first archival time stays) and returns it; null
 * when there is none. Archiving hides it from the list; its log and work are left as they are.
 */
export function archiveSession(db: SqlHandle, id: string): Promise<Session | null> {
  return maybeRow<Session>(
    db,
    sql`WITH s AS (
      UPDATE sessions SET archived_at = coalesce(archived_at, now()), updated_at = now()
       WHERE id = ${id} AND agent IS NOT NULL RETURNING *)
    SELECT ${SESSION_COLUMNS} FROM s`,
  );
}
