import { sql } from 'drizzle-orm';
import { fixedSql } from '../db/fixed-sql.js';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { withSpan } from '../telemetry/tracing.js';
import { WorkConflictError, WorkNotFoundError } from './errors.js';
import { CALLS_OPEN, WORK_COLUMNS, wireScope } from './sql.js';
import type { Work, WorkState } from './types.js';

/**
 * Stops a work item and returns it as it stands after the stop (the wire answers with it).
 *
 * - `force`: any item not yet stopped → stopped at once, lease cleared.
 * - graceful: an `active` item → `stopping`, keeping its lease — its worker learns of the stop
 *   from its next heartbeat, drains, and force-stops it; if that worker died, the lapse of the
 *   lease marks the wind-down abandoned and `poll` / `finalizeAbandoned` settle it. A `queued`
 *   or `starting` item is stopped outright: nobody could ever lead it out of `stopping` (a
 *   queued item has no holder; a starting one has no heartbeat left to be told on).
 *
 * Every branch is decided on the pre-update state within one statement. An item already past
 * the requested transition → `WorkConflictError`; not visible → `WorkNotFoundError`.
 */
export async function stop(
  db: SqlHandle,
  environmentId: string,
  workId: string,
  force: boolean,
): Promise<Work> {
  return (await stopWork(db, environmentId, workId, force)).work;
}

const SCOPE = wireScope(sql.placeholder('environmentId'), sql.placeholder('workId'));

/** A forced stop: stopped at once from any state but stopped. Rendered once (fixed-sql.ts). */
const FORCED_STOP = fixedSql<'environmentId' | 'workId'>(
  sql`UPDATE work_items w
         SET state = 'stopped', stop_requested_at = coalesce(w.stop_requested_at, now()),
             stopped_at = now(), lease_expires_at = NULL, updated_at = now()
       WHERE ${SCOPE} AND w.state <> 'stopped'
   RETURNING ${WORK_COLUMNS}, ${CALLS_OPEN}`,
);

/** A graceful stop: an active item winds down (stopping), a live one not yet running stops. Rendered once. */
const STOP = fixedSql<'environmentId' | 'workId'>(
  sql`UPDATE work_items w
         SET state = CASE WHEN w.state = 'active' THEN 'stopping' ELSE 'stopped' END,
             stop_requested_at = coalesce(w.stop_requested_at, now()),
             stopped_at = CASE WHEN w.state = 'active' THEN w.stopped_at ELSE now() END,
             lease_expires_at = CASE WHEN w.state = 'active' THEN w.lease_expires_at END,
             updated_at = now()
       WHERE ${SCOPE} AND w.state IN ('queued', 'starting', 'active')
   RETURNING ${WORK_COLUMNS}, ${CALLS_OPEN}`,
);

/**
 * `stop`, also saying whether the item's session still has tool calls waiting for an answer,
 * from the same statement: a stopped `tool_exec` item with calls open must be re-armed, and a
 * stop — on the wire's hot path — must not pay a second round trip to find out.
 */
export function stopWork(
  db: SqlHandle,
  environmentId: string,
  workId: string,
  force: boolean,
): Promise<{ work: Work; callsOpen: boolean }> {
  const attributes = { 'environment.id': environmentId, 'work.id': workId, 'work.force': force };
  return withSpan('queue.stop', attributes, async () => {
    const row = await maybeRow<Work & { callsOpen: boolean }>(
      db,
      (force ? FORCED_STOP : STOP)({ environmentId, workId }),
    );
    if (row) {
      const { callsOpen, ...work } = row;
      return { work, callsOpen };
    }
    const current = await maybeRow<{ state: WorkState }>(
      db,
      sql`SELECT w.state FROM work_items w WHERE ${wireScope(environmentId, workId)}`,
    );
    if (!current) throw new WorkNotFoundError(workId);
    throw new WorkConflictError(workId, current.state);
  });
}
