import { sql } from 'drizzle-orm';
import { rows, type SqlHandle } from '../db/handle.js';
import { interval, type Timestamp, ts } from '../db/time.js';

/** A deleted session's journal run, held by one housekeeping run until `claimedUntil`. */
export interface JournalPurgeClaim {
  runId: string;
  /** The hold's exact stamp: the proof `forgetJournalPurge` must carry. */
  claimedUntil: Timestamp;
}

/**
 * Takes at most `batch` runs to purge, requested longer ago than `graceMs`, and holds them for
 * `holdMs`; oldest first. A run held by another housekeeping run is passed over until its
 * hold lapses (that run died, or NATS failed it), so two runs at once purge disjoint runs.
 * A run whose id names a session again (a platform session opened under the same id) is
 * passed over: purging it would erase a live journal.
 */
export function claimJournalPurges(
  db: SqlHandle,
  graceMs: number,
  holdMs: number,
  batch: number,
): Promise<JournalPurgeClaim[]> {
  return rows<JournalPurgeClaim>(
    db,
    sql`UPDATE journal_purges p SET claimed_until = now() + ${interval(holdMs)}
          FROM (SELECT q.run_id FROM journal_purges q
                 WHERE q.requested_at < now() - ${interval(graceMs)}
                   AND (q.claimed_until IS NULL OR q.claimed_until < now())
                   AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = q.run_id)
                 ORDER BY q.requested_at
                 LIMIT ${batch}
                 FOR UPDATE OF q SKIP LOCKED) picked
         WHERE p.run_id = picked.run_id
     RETURNING p.run_id AS "runId", ${sql.raw(ts('p.claimed_until'))} AS "claimedUntil"`,
  );
}
