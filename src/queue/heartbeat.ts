import { sql } from 'drizzle-orm';
import { fixedSql } from '../db/fixed-sql.js';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { instantOf, instantParts } from '../db/instant.js';
import { interval, ts } from '../db/time.js';
import { withSpan } from '../telemetry/tracing.js';
import { type HeartbeatCurrentState, HeartbeatMismatchError, WorkNotFoundError } from './errors.js';
import { wireScope } from './sql.js';
import { type HeartbeatResult, NO_HEARTBEAT, type WorkState } from './types.js';

const LAST_HEARTBEAT = sql.raw(`${ts('w.last_heartbeat')} AS "lastHeartbeat"`);

/** A heartbeat's answer from the row it wrote: only an active item's lease was extended. */
export function heartbeatResult(
  row: { lastHeartbeat: string; state: WorkState },
  ttlSeconds: number,
): HeartbeatResult {
  return {
    lastHeartbeat: row.lastHeartbeat,
    state: row.state,
    leaseExtended: row.state === 'active',
    ttlSeconds,
  };
}

const p = sql.placeholder;

/** The first heartbeat after an ack: starting → active, the lease `ttlMs` long. Rendered once (fixed-sql.ts). */
const FIRST_BEAT = fixedSql<'environmentId' | 'workId' | 'ttlMs'>(
  sql`UPDATE work_items w
         SET state = 'active', last_heartbeat = now(), started_at = now(), heartbeats = 1,
             lease_expires_at = now() + ${interval(p('ttlMs'))}, updated_at = now()
       WHERE ${wireScope(p('environmentId'), p('workId'))} AND w.state = 'starting' AND w.last_heartbeat IS NULL
   RETURNING ${LAST_HEARTBEAT}, w.state`,
);

/**
 * A heartbeat that echoes the last one (`local` at `offsetMinutes`, db/instant.ts). The new value
 * is strictly later than the one echoed, even within one tick of a coarse clock (PGlite's): a
 * superseded echo must never match again. Rendered once (fixed-sql.ts).
 */
const ECHOED_BEAT = fixedSql<'environmentId' | 'workId' | 'ttlMs' | 'local' | 'offsetMinutes'>(
  sql`UPDATE work_items w
         SET last_heartbeat = CASE WHEN w.state = 'active'
                                   THEN greatest(now(), w.last_heartbeat + interval '1 microsecond')
                                   ELSE w.last_heartbeat END,
             heartbeats = CASE WHEN w.state = 'active' THEN w.heartbeats + 1 ELSE w.heartbeats END,
             lease_expires_at = CASE WHEN w.state = 'active' THEN now() + ${interval(p('ttlMs'))} ELSE w.lease_expires_at END,
             updated_at = now()
       WHERE ${wireScope(p('environmentId'), p('workId'))} AND w.last_heartbeat = ${instantOf(p('local'), p('offsetMinutes'))}
   RETURNING ${LAST_HEARTBEAT}, w.state`,
);

/**
 * The wire's optimistic-concurrency heartbeat.
 *
 * - `expected === NO_HEARTBEAT` claims the lease of a just-acked item: starting → active,
 *   stamping started_at and last_heartbeat, lease = now + ttl.
 * - Otherwise `expected` must equal the row's last_heartbeat to the microsecond (the worker
 *   echoes what the server last returned). An active item gets a new last_heartbeat and
 *   lease; a stopping or stopped one answers unchanged with `leaseExtended: false` — that is
 *   how a worker learns it was asked to stop.
 *
 * An unparseable `expected` fails the precondition before any lookup. No row matched → the
 * item is either not visible (`WorkNotFoundError`) or the precondition failed
 * (`HeartbeatMismatchError`, carrying the row's current state). `ttlSeconds` is echoed as
 * given even when nothing was extended.
 */
export function heartbeat(
  db: SqlHandle,
  environmentId: string,
  workId: string,
  expected: string,
  ttlSeconds: number,
): Promise<HeartbeatResult> {
  return withSpan('queue.heartbeat', { 'environment.id': environmentId, 'work.id': workId }, async () => {
    const ttlMs = ttlSeconds * 1000;
    let row: { lastHeartbeat: string; state: WorkState } | null;
    if (expected === NO_HEARTBEAT) {
      row = await maybeRow(db, FIRST_BEAT({ environmentId, workId, ttlMs }));
    } else {
      const echoed = instantParts(expected);
      if (!echoed) throw new HeartbeatMismatchError(workId, null);
      row = await maybeRow(
        db,
        ECHOED_BEAT({
          environmentId,
          workId,
          ttlMs,
          local: echoed.local,
          offsetMinutes: echoed.offsetMinutes,
        }),
      );
    }
    if (row) return heartbeatResult(row, ttlSeconds);
    const current = await maybeRow<HeartbeatCurrentState>(
      db,
      sql`SELECT ${LAST_HEARTBEAT}, w.state FROM work_items w WHERE ${wireScope(environmentId, workId)}`,
    );
    if (!current) throw new WorkNotFoundError(workId);
    throw new HeartbeatMismatchError(workId, current);
  });
}
