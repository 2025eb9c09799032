/**
 * The queue's housekeeping steps for cron entry points (`housekeeping/run-once.ts` runs them):
 * bounded, idempotent, and safe to overlap with themselves or with polls (SKIP LOCKED, and
 * every UPDATE re-checks its predicate on the locked row). Nothing here runs on a timer;
 * `functions/` decides when.
 */
import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { interval } from '../db/time.js';
import { drain, type HousekeepingOptions } from './drain.js';
import { FINALIZE_BATCH } from './poll.js';
import { WORKERS_POLLING_WINDOW_MS } from './stats.js';

export type { HousekeepingOptions } from './drain.js';

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

async function count(db: SqlHandle, query: ReturnType<typeof sql>): Promise<number> {
  return (await maybeRow<{ n: number }>(db, query))?.n ?? 0;
}

/** A step's rows, and whether it filled its batch (so another may find more). */
async function full(batch: number, rows: Promise<number>): Promise<{ rows: number; more: boolean }> {
  const n = await rows;
  return { rows: n, more: n >= batch };
}
