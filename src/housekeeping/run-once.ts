/**
 * Housekeeping for cron entry points: one pass over the queue's steps (`queue/housekeeping.ts`,
 * its samples and retention) and the sessions' retention (`sessions/retention.ts`), bounded,
 * idempotent, and safe to overlap with itself. It lives above both so the queue never reaches
 * up into sessions or the journal. Nothing here runs on a timer; `functions/` decides when.
 */
import type { Database } from '../db/handle.js';
import {
  finalizeAbandoned,
  type HousekeepingOptions,
  pruneSamples,
  reapPolls,
  retireStoppedWork,
  sampleQueues,
} from '../queue/index.js';
import {
  type JournalProvider,
  purgeJournals,
  retireArchivedSessions,
  retireEmptyPlatformSessions,
} from '../sessions/index.js';
import { withSpan } from '../telemetry/tracing.js';
import { type VacuumScope, vacuum } from './vacuum.js';

export interface HousekeepingDeps {
  /** A database, not a transaction: some steps open transactions of their own. */
  db: Database;
  /**
   * The journal's stream manager, asked for only when a deleted session's run is due for its
   * purge (a Worker connects to NATS then, not on every cron). Absent: the purges wait for a
   * run that has one.
   */
  journal?: JournalProvider;
  /**
   * For a database with no autovacuum (the embedded PGlite): the run vacuums the churned
   * tables, or the whole database with fresh statistics, after the retention (`vacuum.ts`).
   * Absent: PostgreSQL's autovacuum does it.
   */
  vacuum?: VacuumScope;
}
export interface HousekeepingCounts {
  finalized: number;
  reaped: number;
  /** Queue samples written (one per non-archived environment). */
  sampled: number;
  /** Queue samples deleted for being older than the retention. */
  pruned: number;
  /** Work items deleted for having been stopped longer than their retention. */
  deletedWorkItems: number;
  /** Archived sessions deleted after their retention, and the events of their logs. */
  deletedSessions: number;
  deletedEvents: number;
  /** Platform-lane sessions deleted a retention after their last work item went. */
  deletedPlatformSessions: number;
  /** Journal runs of deleted sessions purged from the stream. */
  purgedJournals: number;
  /** VACUUM statements run (only where `vacuum` is asked for). */
  vacuumed: number;
}

/**
 * One housekeeping pass, as a cron trigger runs it; one span, so a run is one trace. The
 * sample is taken after finalize and reap, so it sees the queue they leave behind. Retention
 * follows (rows deleted after their configured time), then the vacuum where the database has
 * no autovacuum (the space the retention freed is reusable at once), and the journal purges
 * come last: they are the one step that needs NATS, so an outage there fails the run with
 * every other step done.
 */
export function runOnce(
  deps: HousekeepingDeps,
  options: HousekeepingOptions = {},
): Promise<HousekeepingCounts> {
  return withSpan('queue.housekeeping', {}, async () => {
    const finalized = await finalizeAbandoned(deps.db, options);
    const reaped = await reapPolls(deps.db, options);
    const sampled = await sampleQueues(deps.db);
    const pruned = await pruneSamples(deps.db);
    const touched = new Set<string>();
    const deletedWorkItems = await retireStoppedWork(deps.db, options, touched);
    const { sessions: deletedSessions, events: deletedEvents } = await retireArchivedSessions(
      deps.db,
      options,
    );
    const deletedPlatformSessions = await retireEmptyPlatformSessions(deps.db, touched, options);
    const vacuumed = deps.vacuum ? await vacuum(deps.db, deps.vacuum) : 0;
    const purgedJournals = deps.journal ? await purgeJournals(deps.db, deps.journal, options) : 0;
    return {
      finalized,
      reaped,
      sampled,
      pruned,
      deletedWorkItems,
      deletedSessions,
      deletedEvents,
      deletedPlatformSessions,
      purgedJournals,
      vacuumed,
    };
  });
}
