/**
 * Sessions' retention: what housekeeping deletes once it has been kept long enough — API
 * sessions archived for longer than their retention (whole: row, log, tool calls, work), and
 * the journal runs of deleted sessions (a work item's retention is `queue/retention.ts`).
 * Each step is bounded (`batch` rows a statement, `maxBatches` statements a run; the next run
 * goes on) and safe to overlap with itself: rows are taken with SKIP LOCKED, so two runs
 * delete disjoint rows and their counts add up to what went.
 *
 * A session's log is never cut while the session exists: the brain rebuilds every turn's
 * request from the whole log (and from its journal), so events go only with their session.
 */
import type { JetStreamManager } from '@nats-io/jetstream';
import type { SqlHandle } from '../db/handle.js';
import { purgeRun } from '../journal/index.js';
import { drain, type HousekeepingOptions } from '../queue/index.js';
import { claimJournalPurges } from './claim-journal-purges.js';
import { deleteArchivedSessions } from './delete-archived.js';
import { forgetJournalPurge } from './forget-journal-purge.js';

export type JournalProvider = () => Promise<JetStreamManager>;

const DEFAULT_BATCH = 500;
/** Purges are NATS requests, one per run: fewer per statement than rows. */
const DEFAULT_PURGE_BATCH = 50;

/**
 * A deleted session's run is purged this long after the deletion. Its items went with it, so
 * every holder is refused at its next lease write — within its ttl, an hour at most (platform
 * claims) — and writes nothing after; purging sooner could let a holder still in its turn
 * write onto the emptied subject, where nothing would purge it again.
 */
export const JOURNAL_PURGE_GRACE_MS = 2 * 3_600_000;
/** How long a run holds a purge it took; another takes it over after (a purge is idempotent). */
export const JOURNAL_PURGE_HOLD_MS = 5 * 60_000;

/** Deletes API sessions archived longer ago than the retention; returns sessions and events. */
export async function retireArchivedSessions(
  db: SqlHandle,
  options: HousekeepingOptions = {},
): Promise<{ sessions: number; events: number }> {
  const retainMs = options.retainArchivedSessionsMs ?? 0;
  const batch = options.batch ?? DEFAULT_BATCH;
  if (retainMs <= 0) return { sessions: 0, events: 0 };
  let events = 0;
  const sessions = await drain('queue.delete_archived_sessions', options, async () => {
    const done = await deleteArchivedSessions(db, retainMs, batch);
    events += done.events;
    // More are due when the batch was full of candidates or the budget left some behind.
    return { rows: done.sessions, more: done.picked >= batch || done.sessions < done.picked };
  });
  return { sessions, events };
}

/**
 * Purges the journal runs of sessions deleted more than the grace ago, each under a hold, and
 * forgets each once purged; returns how many were forgotten (a run that lost its hold to
 * another is counted by that one). A NATS failure throws with the rest still held, for
 * another run to take over once the hold lapses.
 */
export function purgeJournals(
  db: SqlHandle,
  journal: JournalProvider,
  options: HousekeepingOptions = {},
): Promise<number> {
  const batch = options.batch ?? DEFAULT_PURGE_BATCH;
  let jsm: JetStreamManager | null = null;
  return drain('queue.purge_journals', options, async () => {
    const claims = await claimJournalPurges(db, JOURNAL_PURGE_GRACE_MS, JOURNAL_PURGE_HOLD_MS, batch);
    if (claims.length === 0) return { rows: 0, more: false };
    jsm ??= await journal();
    let rows = 0;
    for (const claim of claims) {
      await purgeRun(jsm, claim.runId);
      if (await forgetJournalPurge(db, claim)) rows++;
    }
    return { rows, more: claims.length >= batch };
  });
}
