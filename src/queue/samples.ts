/**
 * Queue samples: one row per environment per minute, written by housekeeping, so an operator
 * console can chart the last hour. They live in a table because a Worker keeps nothing
 * between requests; the minute key keeps the table bounded however often housekeeping runs.
 */
import { sql } from 'drizzle-orm';
import { maybeRow, rows, type SqlHandle } from '../db/handle.js';
import { interval, ts } from '../db/time.js';
import { withSpan } from '../telemetry/tracing.js';
import { queueFigures } from './queue-figures.js';
import type { Timestamp } from './types.js';

/** The chart shows the last hour; a few minutes spare so its first point is never half-pruned. */
export const SAMPLE_RETENTION_MINUTES = 65;

/** One environment's queue at one minute. The first four fields mean what they do in `stats`. */
export interface QueueSample {
  minute: Timestamp;
  depth: number;
  pending: number;
  workersPolling: number;
  /** Queued claim-lane items of the environment (the platform's backlog for it). */
  claimQueued: number;
  oldestQueuedAt: Timestamp | null;
}

/**
 * Samples every non-archived environment at the current minute, with the semantics of
 * `stats` plus the claim lane's backlog (`queueFigures`), and returns the rows written. A
 * second sample in the same minute (a run more often than once a minute, or another
 * replica's) replaces the first: the latest wins.
 */
export function sampleQueues(db: SqlHandle): Promise<number> {
  return withSpan('queue.sample_queues', {}, async (span) => {
    const row = await maybeRow<{ n: number }>(
      db,
      sql`WITH ${queueFigures(null)}, written AS (
        INSERT INTO queue_samples
               (environment_id, minute, depth, pending, workers_polling, claim_queued, oldest_queued_at)
        SELECT e.id, date_trunc('minute', now()), coalesce(p.depth, 0), coalesce(p.pending, 0),
               coalesce(w.workers, 0), coalesce(c.queued, 0), p.oldest
          FROM environments e
          LEFT JOIN poll_lane p ON p.environment_id = e.id
          LEFT JOIN claim_lane c ON c.environment_id = e.id
          -- As in stats: only a self_hosted environment has workers that poll.
          LEFT JOIN polling w ON w.environment_id = e.id AND e.kind = 'self_hosted'
         WHERE e.archived_at IS NULL
        ON CONFLICT (environment_id, minute) DO UPDATE
           SET depth = excluded.depth, pending = excluded.pending,
               workers_polling = excluded.workers_polling, claim_queued = excluded.claim_queued,
               oldest_queued_at = excluded.oldest_queued_at
        RETURNING 1
      )
      SELECT count(*)::int AS n FROM written`,
    );
    const n = row?.n ?? 0;
    span.setAttribute('queue.rows', n);
    return n;
  });
}

/** Deletes samples older than the retention, in every environment; returns how many. */
export function pruneSamples(db: SqlHandle): Promise<number> {
  return withSpan('queue.prune_samples', {}, async (span) => {
    const row = await maybeRow<{ n: number }>(
      db,
      sql`WITH done AS (
        DELETE FROM queue_samples
         WHERE minute < now() - ${interval(SAMPLE_RETENTION_MINUTES * 60_000)}
        RETURNING 1
      )
      SELECT count(*)::int AS n FROM done`,
    );
    const n = row?.n ?? 0;
    span.setAttribute('queue.rows', n);
    return n;
  });
}

/** The environment's samples of the last `minutes`, oldest first. */
export function readSamples(db: SqlHandle, environmentId: string, minutes: number): Promise<QueueSample[]> {
  return withSpan('queue.read_samples', { 'environment.id': environmentId }, () =>
    rows<QueueSample>(
      db,
      sql`SELECT ${sql.raw(ts('minute'))} AS minute, depth, pending, workers_polling AS "workersPolling",
                 claim_queued AS "claimQueued", ${sql.raw(ts('oldest_queued_at'))} AS "oldestQueuedAt"
            FROM queue_samples
           WHERE environment_id = ${environmentId} AND minute > now() - ${interval(minutes * 60_000)}
           ORDER BY minute`,
    ),
  );
}
