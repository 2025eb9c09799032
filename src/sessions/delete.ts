import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { SESSION_EVENTS_CHANNEL } from './sql.js';

/**
 * Deletes an API session with its log, tool calls and work items (they cascade); true when
 * there was one. NOTIFY wakes its open streams, which then end with `session.deleted`. Its
 * journal run is queued for a purge in the same statement (`journal_purges`), which
 * housekeeping carries out: the journal lives in another store, and a purge must survive a
 * crash or a NATS outage between the two.
 */
export async function deleteSession(db: SqlHandle, id: string): Promise<boolean> {
  const row = await maybeRow(
    db,
    sql`WITH gone AS (DELETE FROM sessions WHERE id = ${id} AND agent IS NOT NULL RETURNING id),
        purge AS (
          INSERT INTO journal_purges (run_id) SELECT id FROM gone
          ON CONFLICT (run_id) DO UPDATE SET requested_at = now(), claimed_until = NULL
        )
        SELECT pg_notify(${SESSION_EVENTS_CHANNEL}, gone.id)::text AS notified FROM gone`,
  );
  return row !== null;
}
