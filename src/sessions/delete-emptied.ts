import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';

/** What one `deleteEmptiedSessions` statement did. */
export interface EmptiedDeletion {
  /** Sessions deleted, each with its journal run queued for a purge. */
  deleted: number;
  /** Sessions that had work again: kept, and no longer counted as emptied. */
  revived: number;
}

/**
 * Deletes those of `sessionIds` (locked by `lockEmptiedSessions` in the same transaction)
 * that still have no work item, queueing each one's journal run for a purge, and clears the
 * stamp of the others. It must be a statement of its own: its snapshot is taken after the
 * locks, so it sees every item committed before them, and an enqueue after them waits on the
 * lock (its foreign key check) and then finds the session gone. In the statement that took
 * the locks, an item committed between its snapshot and its lock would be invisible to the
 * check yet deleted by the cascade.
 */
export async function deleteEmptiedSessions(
  db: SqlHandle,
  sessionIds: readonly string[],
): Promise<EmptiedDeletion> {
  if (sessionIds.length === 0) return { deleted: 0, revived: 0 };
  const row = await maybeRow<EmptiedDeletion>(
    db,
    sql`WITH chosen AS (
      SELECT s.id, EXISTS (SELECT 1 FROM work_items w WHERE w.session_id = s.id) AS busy
        FROM sessions s
       WHERE s.id IN (SELECT jsonb_array_elements_text(${JSON.stringify(sessionIds)}::jsonb))
    ), revived AS (
      UPDATE sessions s SET emptied_at = NULL FROM chosen c WHERE s.id = c.id AND c.busy
      RETURNING 1
    ), gone AS (
      DELETE FROM sessions s USING chosen c WHERE s.id = c.id AND NOT c.busy
      RETURNING s.id
    ), purges AS (
      INSERT INTO journal_purges (run_id) SELECT id FROM gone
      ON CONFLICT (run_id) DO UPDATE SET requested_at = now(), claimed_until = NULL
    )
    SELECT (SELECT count(*) FROM gone)::int AS deleted, (SELECT count(*) FROM revived)::int AS revived`,
  );
  return { deleted: row?.deleted ?? 0, revived: row?.revived ?? 0 };
}
