import { sql } from 'drizzle-orm';
import { rows, type SqlHandle } from '../db/handle.js';
import { instant } from '../db/instant.js';
import { ts } from '../db/time.js';
import { withSpan } from '../telemetry/tracing.js';
import type { WorkCursor } from './list-work.js';
import { WORK_COLUMNS } from './sql.js';
import type { Timestamp, Work, WorkKind, WorkLane, WorkState } from './types.js';

/** An item as an operator sees it: the wire's fields plus the lane and the last write. */
export interface BrowsedWork extends Work {
  lane: WorkLane;
  updatedAt: Timestamp;
  /** Whether `leaseExpiresAt` is still ahead by the database's clock; null without a lease. */
  leaseLive: boolean | null;
  /** Heartbeats accepted from the current holder. */
  heartbeats: number;
}

/** `WORK_COLUMNS` plus what only an operator sees. */
export const BROWSED_COLUMNS = sql`${WORK_COLUMNS}, w.lane, ${sql.raw(ts('w.updated_at'))} AS "updatedAt",
  (w.lease_expires_at >= now()) AS "leaseLive", w.heartbeats`;

export interface BrowseFilter {
  state?: WorkState;
  kind?: WorkKind;
  after?: WorkCursor | null;
  fetch: number;
}

/**
 * A page of the environment's items on both lanes, newest first by (created_at, id),
 * optionally of one state and one kind. The operator's view: unlike `listWork` it is not
 * limited to what a worker could poll.
 */
export function browseWork(
  db: SqlHandle,
  environmentId: string,
  filter: BrowseFilter,
): Promise<BrowsedWork[]> {
  const state = filter.state ? sql`AND w.state = ${filter.state}` : sql``;
  const kind = filter.kind ? sql`AND w.kind = ${filter.kind}` : sql``;
  const after = filter.after
    ? sql`AND (w.created_at, w.id) < (${cursorInstant(filter.after)}, ${filter.after.id})`
    : sql``;
  return withSpan('queue.browse_work', { 'environment.id': environmentId }, () =>
    rows<BrowsedWork>(
      db,
      sql`SELECT ${BROWSED_COLUMNS} FROM work_items w
           WHERE w.environment_id = ${environmentId} ${state} ${kind} ${after}
           ORDER BY w.created_at DESC NULLS LAST, w.id DESC NULLS LAST
           LIMIT ${filter.fetch}`,
    ),
  );
}

/** Cursors are checked when decoded, so a bad one here is a caller's bug, as in `listWork`. */
function cursorInstant(after: WorkCursor) {
  const at = instant(after.createdAt);
  if (!at) throw new TypeError(`not a cursor position: ${JSON.stringify(after.createdAt)}`);
  return at;
}
