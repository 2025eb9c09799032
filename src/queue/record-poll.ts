import { type SQL, sql } from 'drizzle-orm';
import type { SqlHandle } from '../db/handle.js';
import { interval } from '../db/time.js';
import { withSpan } from '../telemetry/tracing.js';
import { WORKERS_POLLING_WINDOW_MS } from './stats.js';

/**
 * Records that `workerId` polled the environment, feeding `workersPolling`. The same
 * statement reaps the environment's other rows that have aged out of the window, so the
 * table stays bounded by recently active workers even when every worker process mints a
 * fresh id; a row outside the window is one the stat would not count anyway.
 *
 * Best-effort telemetry: callers log a failure and carry on with the poll.
 */
export function recordPoll(db: SqlHandle, environmentId: string, workerId: string): Promise<void> {
  return withSpan('queue.record_poll', { 'environment.id': environmentId }, async () => {
    await db.execute(sql`WITH ${recordPollCtes(environmentId, workerId)} SELECT 1 AS ok`);
  });
}

/**
 * `recordPoll`'s writes as common table expressions (`reaped`, `recorded`), so a poll can
 * carry them in its own statement (`poll(…, recordWorker)`) instead of paying one more. The
 * two touch different rows (this worker's, and others' aged out), so they may share one.
 */
export function recordPollCtes(environmentId: string, workerId: string): SQL {
  return sql`reaped AS (
        DELETE FROM worker_polls
         WHERE environment_id = ${environmentId} AND worker_id <> ${workerId}
           AND last_polled_at < now() - ${interval(WORKERS_POLLING_WINDOW_MS)}
      ), recorded AS (
        INSERT INTO worker_polls (environment_id, worker_id, last_polled_at)
        VALUES (${environmentId}, ${workerId}, now())
        ON CONFLICT (environment_id, worker_id) DO UPDATE SET last_polled_at = now()
      )`;
}
