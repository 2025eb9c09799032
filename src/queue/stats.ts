import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { interval, ts } from '../db/time.js';
import { withSpan } from '../telemetry/tracing.js';
import type { WorkStats } from './types.js';

/** A worker counts toward `workersPolling` while its last poll is this recent. */
export const WORKERS_POLLING_WINDOW_MS = 30_000;

/**
 * The environment's queue in one snapshot (an aggregate-only SELECT always yields one row):
 * `depth` = queued items a worker can take now, `pending` = queued items under a live poll
 * reservation, `oldestQueuedAt` over both, `workersPolling` = distinct workers seen within
 * the window. An acked item has left the queue and counts toward neither. Every field is
 * scoped like the rest of the work API, so a cloud environment reports zeros.
 */
export function stats(db: SqlHandle, environmentId: string): Promise<WorkStats> {
  return withSpan('queue.stats', { 'environment.id': environmentId }, async () => {
    const row = await maybeRow<WorkStats>(
      db,
      sql`SELECT count(*) FILTER (WHERE w.lease_expires_at IS NULL OR w.lease_expires_at < now())::int AS depth,
                 count(*) FILTER (WHERE w.lease_expires_at >= now())::int AS pending,
                 ${sql.raw(ts('min(w.created_at)'))} AS "oldestQueuedAt",
                 (SELECT count(DISTINCT p.worker_id)::int
                    FROM worker_polls p JOIN environments e ON e.id = p.environment_id
                   WHERE p.environment_id = ${environmentId} AND e.kind = 'self_hosted'
                     AND p.last_polled_at > now() - ${interval(WORKERS_POLLING_WINDOW_MS)}) AS "workersPolling"
            FROM work_items w
           WHERE w.environment_id = ${environmentId} AND w.lane = 'poll' AND w.state = 'queued'`,
    );
    return row!;
  });
}
