import { sql } from 'drizzle-orm';
import { rows, type SqlHandle } from '../db/handle.js';
import { withSpan } from '../telemetry/tracing.js';
import { interval, ts } from './sql.js';
import { WORKERS_POLLING_WINDOW_MS } from './stats.js';
import type { Timestamp } from './types.js';

/** An environment's queue at a glance: `stats` for the poll lane, plus the claim lane's backlog. */
export interface EnvironmentSummary {
  environmentId: string;
  depth: number;
  pending: number;
  oldestQueuedAt: Timestamp | null;
  /** Age of the oldest queued poll-lane item by the database's clock, so no browser clock enters. */
  oldestQueuedMs: number | null;
  workersPolling: number;
  /** Queued claim-lane items (model turns, cloud tools, …), which `stats` does not count. */
  claimQueued: number;
  /** Claim-lane items under a live lease. */
  claimLeased: number;
  /** The database's clock when the figures were read. */
  at: Timestamp;
}

/**
 * One row per id given (zeros for an environment with nothing queued), in one statement: the
 * `stats` figures with the same definitions, and the claim lane's. Bounded by the page of
 * environments the caller shows.
 */
export function environmentSummaries(db: SqlHandle, environmentIds: string[]): Promise<EnvironmentSummary[]> {
  if (environmentIds.length === 0) return Promise.resolve([]);
  const ids = sql.join(
    environmentIds.map((id) => sql`(${id}::text)`),
    sql`, `,
  );
  return withSpan('queue.environment_summaries', { 'environment.count': environmentIds.length }, () =>
    rows<EnvironmentSummary>(
      db,
      sql`SELECT e.id AS "environmentId",
                 coalesce(q.depth, 0)::int AS depth, coalesce(q.pending, 0)::int AS pending,
                 ${sql.raw(ts('q.oldest'))} AS "oldestQueuedAt",
                 (extract(epoch FROM now() - q.oldest) * 1000)::bigint::float8 AS "oldestQueuedMs",
                 coalesce(p.workers, 0)::int AS "workersPolling",
                 coalesce(q.claim_queued, 0)::int AS "claimQueued",
                 coalesce(q.claim_leased, 0)::int AS "claimLeased",
                 ${sql.raw(ts('now()'))} AS at
            FROM (VALUES ${ids}) AS e(id)
            LEFT JOIN LATERAL (
              SELECT count(*) FILTER (WHERE w.lane = 'poll' AND w.state = 'queued'
                                        AND (w.lease_expires_at IS NULL OR w.lease_expires_at < now())) AS depth,
                     count(*) FILTER (WHERE w.lane = 'poll' AND w.state = 'queued' AND w.lease_expires_at >= now()) AS pending,
                     min(w.created_at) FILTER (WHERE w.lane = 'poll' AND w.state = 'queued') AS oldest,
                     count(*) FILTER (WHERE w.lane = 'claim' AND w.state = 'queued') AS claim_queued,
                     count(*) FILTER (WHERE w.lane = 'claim' AND w.state = 'active' AND w.lease_expires_at >= now()) AS claim_leased
                FROM work_items w
               WHERE w.environment_id = e.id AND w.state IN ('queued', 'active')
            ) q ON true
            LEFT JOIN LATERAL (
              SELECT count(DISTINCT wp.worker_id) AS workers
                FROM worker_polls wp JOIN environments env ON env.id = wp.environment_id
               WHERE wp.environment_id = e.id AND env.kind = 'self_hosted'
                 AND wp.last_polled_at > now() - ${interval(WORKERS_POLLING_WINDOW_MS)}
            ) p ON true`,
    ),
  );
}
