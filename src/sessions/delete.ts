import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { SESSION_EVENTS_CHANNEL } from './sql.js';

/**
 * Deletes an API session with its log, tool calls and work items (they cascade); true when
 * there was one. NOTIFY wakes its open streams, which then end with `session.deleted`.
 */
export async function deleteSession(db: SqlHandle, id: string): Promise<boolean> {
  const row = await maybeRow(
    db,
    sql`WITH gone AS (DELETE FROM sessions WHERE id = ${id} AND agent IS NOT NULL RETURNING id)
        SELECT pg_notify(${SESSION_EVENTS_CHANNEL}, gone.id)::text AS notified FROM gone`,
  );
  return row !== null;
}
