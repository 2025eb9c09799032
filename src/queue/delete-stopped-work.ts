import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { interval } from '../db/time.js';

/** What one `deleteStoppedWork` statement did. */
export interface StoppedDeletion {
  deleted: number;
  /** The sessions whose items it deleted (some may have items left). */
  sessionIds: string[];
}

/**
 * Deletes at most `batch` items stopped longer ago than `retainMs`, the longest stopped first
 * (work_items_stopped_idx), and says how many and of which sessions. `stopped` is terminal, so nothing will
 * touch such an item again; SKIP LOCKED lets two runs at once take disjoint rows.
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
      RETURNING w.session_id
    )
    SELECT count(*)::int AS deleted,
           coalesce(jsonb_agg(DISTINCT session_id) FILTER (WHERE session_id IS NOT NULL), '[]') AS "sessionIds"
      FROM done`,
  );
  return { deleted: row?.deleted ?? 0, sessionIds: row?.sessionIds ?? [] };
}
