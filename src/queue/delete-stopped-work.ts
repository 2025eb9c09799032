import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { interval } from '../db/time.js';

/** What one `deleteStoppedWork` statement did. */
export interface StoppedDeletion {
  deleted: number;
  /**
   * The sessions whose items it deleted that it did not stamp emptied: some have items left,
   * some another run's deletion still held when this one looked (`markEmptiedSessions` looks
   * again once both have committed).
   */
  sessionIds: string[];
}

/**
 * Deletes at most `batch` items stopped longer ago than `retainMs`, the longest stopped first
 * (work_items_stopped_idx), and says how many and of which sessions. `stopped` is terminal, so nothing will
 * touch such an item again; SKIP LOCKED lets two runs at once take disjoint rows.
 *
 * A platform-lane session whose last items it deletes is stamped emptied by the same statement
 * (the start of that session's own retention), so no crash or failure after the commit can
 * leave it unstamped, and kept for ever. The stamp is only where the session's retention
 * begins to look: an item enqueued meanwhile, which this statement cannot see, is found by
 * the deletion, which keeps the session and clears the stamp.
 *
 * An environment's last answered healthcheck is kept however old: it is what the environment
 * shows as its workers' last answer (`environmentHealthchecks`), and deleting it would turn
 * "answered a month ago" into "never answered".
 */
export async function deleteStoppedWork(
  db: SqlHandle,
  retainMs: number,
  batch: number,
): Promise<StoppedDeletion> {
  const row = await maybeRow<StoppedDeletion>(
    db,
    sql`WITH picked AS (
      SELECT w.id FROM work_items w
       WHERE w.state = 'stopped' AND w.stopped_at < now() - ${interval(retainMs)}
         AND NOT (w.data_type = 'healthcheck' AND w.acknowledged_at IS NOT NULL AND NOT EXISTS (
               SELECT 1 FROM work_items n
                WHERE n.healthcheck_environment_id = w.healthcheck_environment_id
                  AND n.acknowledged_at > w.acknowledged_at))
       ORDER BY w.stopped_at
       LIMIT ${batch}
       FOR UPDATE OF w SKIP LOCKED
    ), done AS (
      DELETE FROM work_items w USING picked WHERE w.id = picked.id
      RETURNING w.id, w.session_id
    ), stamped AS (
      -- The other sub-statements still see the rows deleted above: left means not among them.
      UPDATE sessions s SET emptied_at = now()
       WHERE s.id IN (SELECT session_id FROM done)
         AND s.agent IS NULL AND s.emptied_at IS NULL
         AND NOT EXISTS (SELECT 1 FROM work_items w
                          WHERE w.session_id = s.id AND w.id NOT IN (SELECT id FROM done))
      RETURNING s.id
    )
    SELECT count(*)::int AS deleted,
           coalesce(jsonb_agg(DISTINCT session_id) FILTER (
             WHERE session_id IS NOT NULL AND session_id NOT IN (SELECT id FROM stamped)), '[]') AS "sessionIds"
      FROM done`,
  );
  return { deleted: row?.deleted ?? 0, sessionIds: row?.sessionIds ?? [] };
}
