import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';

/**
 * Stamps `emptied_at` on those of `sessionIds` that are platform-lane sessions with no work
 * item left, and returns how many it stamped. The deleting statement stamps the sessions it
 * emptied alone (`deleteStoppedWork`); this is for the rest, run after that statement has
 * committed, so of two retention runs deleting one session's last items at once, the later
 * to commit sees both deletions (in their statements each still saw the other's items and
 * neither stamped). An item enqueued after this is found by the deletion, which leaves the
 * session be.
 */
export async function markEmptiedSessions(db: SqlHandle, sessionIds: readonly string[]): Promise<number> {
  if (sessionIds.length === 0) return 0;
  const row = await maybeRow<{ n: number }>(
    db,
    sql`WITH stamped AS (
      UPDATE sessions s SET emptied_at = now()
       WHERE s.id IN (SELECT jsonb_array_elements_text(${JSON.stringify(sessionIds)}::jsonb))
         AND s.agent IS NULL AND s.emptied_at IS NULL
         AND NOT EXISTS (SELECT 1 FROM work_items w WHERE w.session_id = s.id)
      RETURNING 1
    )
    SELECT count(*)::int AS n FROM stamped`,
  );
  return row?.n ?? 0;
}
