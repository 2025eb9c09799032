import { type SQL, sql } from 'drizzle-orm';
import { interval } from '../db/time.js';
import { WORKERS_POLLING_WINDOW_MS } from './stats.js';

/**
 * The queue figures per environment, as CTEs a statement joins to its environments:
 * `poll_lane` (depth, pending, oldest: the definitions of `stats`), `claim_lane` (queued,
 * leased) and `polling` (workers seen within the window; the statement keeps them for
 * self_hosted environments only, as `stats` does). Each is one grouped pass over its lane's
 * partial index, so the cost is the live items once, not once per environment.
 *
 * `environmentIds` narrows every pass to those environments; null reads them all.
 */
export function queueFigures(environmentIds: readonly string[] | null): SQL {
  const only =
    environmentIds === null
      ? sql``
      : sql`AND environment_id IN (${sql.join(
          environmentIds.map((id) => sql`${id}`),
          sql`, `,
        )})`;
  return sql`poll_lane AS (
      SELECT environment_id,
             count(*) FILTER (WHERE lease_expires_at IS NULL OR lease_expires_at < now())::int AS depth,
             count(*) FILTER (WHERE lease_expires_at >= now())::int AS pending,
             min(created_at) AS oldest
        FROM work_items
       WHERE lane = 'poll' AND state = 'queued' ${only}
       GROUP BY environment_id
    ), claim_lane AS (
      SELECT environment_id,
             count(*) FILTER (WHERE state = 'queued')::int AS queued,
             count(*) FILTER (WHERE state = 'active' AND lease_expires_at >= now())::int AS leased
        FROM work_items
       WHERE lane = 'claim' AND state IN ('queued', 'active') ${only}
       GROUP BY environment_id
    ), polling AS (
      SELECT environment_id, count(DISTINCT worker_id)::int AS workers
        FROM worker_polls
       WHERE last_polled_at > now() - ${interval(WORKERS_POLLING_WINDOW_MS)} ${only}
       GROUP BY environment_id
    )`;
}
