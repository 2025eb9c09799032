/**
 * Sessions' retention: what housekeeping deletes once it has been kept long enough — API
 * sessions archived for longer than their retention (whole: row, log, tool calls, work),
 * platform-lane sessions left without work for longer than theirs, and the journal runs of
 * deleted sessions (a work item's retention is `queue/retention.ts`).
 * Each step is bounded (`batch` rows a statement, `maxBatches` statements a run; the next run
 * goes on) and safe to overlap with itself: rows are taken with SKIP LOCKED, so two runs
 * delete disjoint rows and their counts add up to what went.
 *
 * A session's log is never cut while the session exists: the brain rebuilds every turn's
 * request from the whole log (and from its journal), so events go only with their session.
 */
import type { JetStreamManager } from '@nats-io/jetstream';
import type { Database, SqlHandle } from '../db/handle.js';
import { purgeRun } from '../journal/index.js';
import { drain, type HousekeepingOptions } from '../queue/index.js';
import { claimJournalPurges } from './claim-journal-purges.js';
import { deleteArchivedSessions } from './delete-archived.js';
import { deleteEmptiedSessions } from './delete-emptied.js';
import { forgetJournalPurge } from './forget-journal-purge.js';
import { lockEmptiedSessions } from './lock-emptied.js';
import { markEmptiedSessions } from './mark-emptied.js';

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
 * Platform-lane sessions have no archive: the platform names them and may come back to one at
 * any time. One is done with once it has no work left: when the stopped-work retention
 * deletes the last of its items it is stamped emptied, by the deleting statement itself or,
 * where two runs at once deleted its last items, here (`touched`: the sessions that step could
 * not stamp), and a retention later it is deleted and its journal run queued for a
 * purge. Each statement pair runs in a transaction of its own: lock, then check and delete
 * (`deleteEmptiedSessions` says why not in one). A session that got work in between is kept
 * and unstamped; one that gets work after its deletion is bound anew by that enqueue. Returns
 * the sessions deleted.
 */
export async function retireEmptyPlatformSessions(
  db: Database,
  touched: ReadonlySet<string>,
  options: HousekeepingOptions = {},
): Promise<number> {
  const batch = options.batch ?? DEFAULT_BATCH;
  const ids = [...touched];
  for (let i = 0; i < ids.length; i += batch) await markEmptiedSessions(db, ids.slice(i, i + batch));
  const retainMs = options.retainEmptyPlatformSessionsMs ?? 0;
  if (retainMs <= 0) return 0;
  return drain('queue.delete_empty_platform_sessions', options, async () => {
    const { picked, deleted } = await db.transaction(async (tx) => {
      const locked = await lockEmptiedSessions(tx, retainMs, batch);
      return { picked: locked.length, ...(await deleteEmptiedSessions(tx, locked)) };
    });
    return { rows: deleted, more: picked >= batch };
  });
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
