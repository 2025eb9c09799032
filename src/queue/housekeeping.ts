/**
 * Housekeeping for cron entry points: bounded, idempotent, and safe to overlap with itself
 * or with polls (SKIP LOCKED, and every UPDATE re-checks its predicate on the locked row).
 * Nothing here runs on a timer; `functions/` decides when.
 */
import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { withSpan } from '../telemetry/tracing.js';
import { FINALIZE_BATCH } from './poll.js';
import { pruneSamples, sampleQueues } from './samples.js';
import { interval } from './sql.js';
import { WORKERS_POLLING_WINDOW_MS } from './stats.js';

export interface HousekeepingOptions {
  /** Rows per statement. */
  batch?: number;
  /** Statements per run at most, so one run is bounded however large the backlog. */
  maxBatches?: number;
}

export interface HousekeepingCounts {
  finalized: number;
  reaped: number;
  /** Queue samples written (one per non-archived environment). */
  sampled: number;
  /** Queue samples deleted for being older than the retention. */
  pruned: number;
}

const DEFAULT_MAX_BATCHES = 20;
const DEFAULT_REAP_BATCH = 500;

/**
 * Settles abandoned wind-downs in every environment: `stopping` poll-lane items whose lease
 * lapsed (their worker died mid-drain) → `stopped`. Polls already do this per environment;
 * this catches environments nobody polls any more.
 */
export function finalizeAbandoned(db: SqlHandle, options: HousekeepingOptions = {}): Promise<number> {
  const batch = options.batch ?? FINALIZE_BATCH;
  return drain('queue.finalize_abandoned', options, batch, () =>
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
  );
}

/** Deletes worker-poll rows older than the workers_polling window, in every environment. */
export function reapPolls(db: SqlHandle, options: HousekeepingOptions = {}): Promise<number> {
  const batch = options.batch ?? DEFAULT_REAP_BATCH;
  return drain('queue.reap_polls', options, batch, () =>
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
  );
}

/**
 * One housekeeping pass, as a cron trigger runs it; one span, so a run is one trace. The
 * sample is taken after finalize and reap, so it sees the queue they leave behind.
 */
export function runOnce(
  deps: { db: SqlHandle },
  options: HousekeepingOptions = {},
): Promise<HousekeepingCounts> {
  return withSpan('queue.housekeeping', {}, async () => {
    const finalized = await finalizeAbandoned(deps.db, options);
    const reaped = await reapPolls(deps.db, options);
    const sampled = await sampleQueues(deps.db);
    const pruned = await pruneSamples(deps.db);
    return { finalized, reaped, sampled, pruned };
  });
}

/** Runs `step` until a short batch or `maxBatches`, in a span `name` counting what it did. */
function drain(
  name: string,
  options: HousekeepingOptions,
  batch: number,
  step: () => Promise<number>,
): Promise<number> {
  const maxBatches = options.maxBatches ?? DEFAULT_MAX_BATCHES;
  return withSpan(name, {}, async (span) => {
    let total = 0;
    for (let i = 0; i < maxBatches; i++) {
      const n = await step();
      total += n;
      if (n < batch) break;
    }
    span.setAttribute('queue.rows', total);
    return total;
  });
}

async function count(db: SqlHandle, query: ReturnType<typeof sql>): Promise<number> {
  return (await maybeRow<{ n: number }>(db, query))?.n ?? 0;
}
