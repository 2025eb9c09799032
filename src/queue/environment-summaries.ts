import { sql } from 'drizzle-orm';
import { rows, type SqlHandle } from '../db/handle.js';
import { ts } from '../db/time.js';
import { withSpan } from '../telemetry/tracing.js';
import { queueFigures } from './queue-figures.js';
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
 * One row per id given (zeros for an environment with nothing queued, or none at all), in one
 * statement over `queueFigures`: the `stats` figures with the same definitions, and the claim
 * lane's. Each lane is read once for all the ids, so a page of environments costs one pass.
 */
export function environmentSummaries(db: SqlHandle, environmentIds: string[]): Promise<EnvironmentSummary[]> {
  if (environmentIds.length === 0) return Promise.resolve([]);
  const ids = sql.join(
    environmentIds.map((id, i) => sql`(${id}::text, ${i}::int)`),
    sql`, `,
  );
  return withSpan('queue.environment_summaries', { 'environment.count': environmentIds.length }, () =>
    rows<EnvironmentSummary>(
      db,
      sql`WITH ${queueFigures(environmentIds)}
          SELECT e.id AS "environmentId",
                 coalesce(p.depth, 0) AS depth, coalesce(p.pending, 0) AS pending,
                 ${sql.raw(ts('p.oldest'))} AS "oldestQueuedAt",
                 (extract(epoch FROM now() - p.oldest) * 1000)::bigint::float8 AS "oldestQueuedMs",
                 coalesce(w.workers, 0) AS "workersPolling",
                 coalesce(c.queued, 0) AS "claimQueued", coalesce(c.leased, 0) AS "claimLeased",
                 ${sql.raw(ts('now()'))} AS at
            FROM (VALUES ${ids}) AS e(id, ord)
            LEFT JOIN environments env ON env.id = e.id
            LEFT JOIN poll_lane p ON p.environment_id = e.id
            LEFT JOIN claim_lane c ON c.environment_id = e.id
            -- As in stats: only a self_hosted environment has workers that poll.
            LEFT JOIN polling w ON w.environment_id = e.id AND env.kind = 'self_hosted'
           ORDER BY e.ord`,
    ),
  );
}
