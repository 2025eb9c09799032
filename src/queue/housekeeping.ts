/**
 * Housekeeping for cron entry points: bounded, idempotent, and safe to overlap with itself
 * or with polls (SKIP LOCKED, and every UPDATE re-checks its predicate on the locked row).
 * Nothing here runs on a timer; `functions/` decides when.
 */
import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { interval } from '../db/time.js';
import { withSpan } from '../telemetry/tracing.js';
import { drain, type HousekeepingOptions } from './drain.js';
import { FINALIZE_BATCH } from './poll.js';
import {
  type JournalProvider,
  purgeJournals,
  retireArchivedSessions,
  retireStoppedWork,
} from './retention.js';
import { pruneSamples, sampleQueues } from './samples.js';
import { WORKERS_POLLING_WINDOW_MS } from './stats.js';

export type { HousekeepingOptions } from './drain.js';

export interface HousekeepingDeps {
  db: SqlHandle;
  /**
   * The journal's stream manager, asked for only when a deleted session's run is due for its
   * purge (a Worker connects to NATS then, not on every cron). Absent: the purges wait for a
   * run that has one.
   */
  journal?: JournalProvider;
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
  /** Journal runs of deleted sessions purged from the stream. */
  purgedJournals: number;
}

const DEFAULT_REAP_BATCH = 500;

/**
 * Settles abandoned wind-downs in every environment: `stopping` poll-lane items whose lease
 * lapsed (their worker died mid-drain) → `stopped`. Polls already do this per environment;
 * this catches environments nobody polls any more.
 */
export function finalizeAbandoned(db: SqlHandle, options: HousekeepingOptions = {}): Promise<number> {
  const batch = options.batch ?? FINALIZE_BATCH;
  return drain('queue.finalize_abandoned', options, () =>
    full(
      batch,
      count(
        db,
        sql`WITH picked AS (
        SELECT id FROM work_items
         WHERE state = 'stopping' AND lane = 'poll' AND (lease_expires_at IS NULL OR lease_expires_at < now())
         LIMIT ${batch}
         FOR UPDATE SKIP LOCKED
      ), done AS (
        UPDATE work_items w
           SET state = 'stopped', stopped_at = now(), lease_expires_at = NULL, updated_at = now()
          FROM picked WHERE w.id = picked.id
        RETURNING 1
      )
      SELECT count(*)::int AS n FROM done`,
      ),
    ),
  );
}

/** Deletes worker-poll rows older than the workers_polling window, in every environment. */
export function reapPolls(db: SqlHandle, options: HousekeepingOptions = {}): Promise<number> {
  const batch = options.batch ?? DEFAULT_REAP_BATCH;
  return drain('queue.reap_polls', options, () =>
    full(
      batch,
      count(
        db,
        sql`WITH picked AS (
        SELECT environment_id, worker_id FROM worker_polls
         WHERE last_polled_at < now() - ${interval(WORKERS_POLLING_WINDOW_MS)}
         LIMIT ${batch}
         FOR UPDATE SKIP LOCKED
      ), done AS (
        DELETE FROM worker_polls p USING picked
         WHERE p.environment_id = picked.environment_id AND p.worker_id = picked.worker_id
        RETURNING 1
      )
      SELECT count(*)::int AS n FROM done`,
      ),
    ),
  );
}

/**
 * One housekeeping pass, as a cron trigger runs it; one span, so a run is one trace. The
 * sample is taken after finalize and reap, so it sees the queue they leave behind. Retention
 * follows (rows deleted after their configured time), and the journal purges come last: they
 * are the one step that needs NATS, so an outage there fails the run with every other step done.
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
    const deletedWorkItems = await retireStoppedWork(deps.db, options);
    const { sessions: deletedSessions, events: deletedEvents } = await retireArchivedSessions(
      deps.db,
      options,
    );
    const purgedJournals = deps.journal ? await purgeJournals(deps.db, deps.journal, options) : 0;
    return {
      finalized,
      reaped,
      sampled,
      pruned,
      deletedWorkItems,
      deletedSessions,
      deletedEvents,
      purgedJournals,
    };
  });
}

async function count(db: SqlHandle, query: ReturnType<typeof sql>): Promise<number> {
  return (await maybeRow<{ n: number }>(db, query))?.n ?? 0;
}

/** A step's rows, and whether it filled its batch (so another may find more). */
async function full(batch: number, rows: Promise<number>): Promise<{ rows: number; more: boolean }> {
  const n = await rows;
  return { rows: n, more: n >= batch };
}
