import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { interval } from '../db/time.js';
import { SESSION_EVENTS_CHANNEL } from './sql.js';

/** What one `deleteArchivedSessions` statement did. */
export interface ArchivedDeletion {
  /** Sessions it found due and locked (at most the batch). */
  picked: number;
  /** Sessions it deleted: a prefix of those picked, by the row budget. */
  sessions: number;
  /** Their events, deleted with them. */
  events: number;
}

/**
 * Deletes API sessions archived longer ago than `retainMs`, oldest archival first, each whole:
 * its row, log, tool calls and work go in one statement (they cascade), so no reader ever
 * sees a session whose log is incomplete. A session with work not yet stopped is left alone
 * — something may still be working for it. Each deleted session's journal run is queued for
 * a purge (`journal_purges`) and its open event streams are woken to end.
 *
 * Bounded by rows, not sessions: sessions are taken while their events (`last_seq`, the log
 * has no gaps) plus their rows fit in `batch`, and the first one always, so a session larger
 * than the budget goes in a statement of its own. SKIP LOCKED passes over a session another
 * run (or an append, which locks the row) holds.
 */
export async function deleteArchivedSessions(
  db: SqlHandle,
  retainMs: number,
  batch: number,
): Promise<ArchivedDeletion> {
  const row = await maybeRow<ArchivedDeletion>(
    db,
    sql`WITH picked AS (
      SELECT s.id, s.last_seq, s.archived_at FROM sessions s
       WHERE s.archived_at < now() - ${interval(retainMs)} AND s.agent IS NOT NULL
         AND NOT EXISTS (SELECT 1 FROM work_items w WHERE w.session_id = s.id AND w.state <> 'stopped')
       ORDER BY s.archived_at, s.id
       LIMIT ${batch}
       FOR UPDATE OF s SKIP LOCKED
    ), sized AS (
      SELECT id, last_seq, sum(last_seq + 1) OVER (ORDER BY archived_at, id) AS upto FROM picked
    ), chosen AS (
      SELECT id FROM sized WHERE upto <= ${batch} OR upto = last_seq + 1
    ), gone AS (
      DELETE FROM sessions s USING chosen WHERE s.id = chosen.id
      RETURNING s.id, s.last_seq
    ), purges AS (
      INSERT INTO journal_purges (run_id) SELECT id FROM gone
      ON CONFLICT (run_id) DO UPDATE SET requested_at = now(), claimed_until = NULL
    )
    SELECT (SELECT count(*) FROM picked)::int AS picked, count(*)::int AS sessions,
           coalesce(sum(last_seq), 0)::int AS events,
           count(pg_notify(${SESSION_EVENTS_CHANNEL}, id)::text)::int AS notified
      FROM gone`,
  );
  return { picked: row?.picked ?? 0, sessions: row?.sessions ?? 0, events: row?.events ?? 0 };
}
