import { type Placeholder, type SQL, sql } from 'drizzle-orm';
import { CALLS_OPEN, WORK_COLUMNS, wireScopeOf } from './sql.js';

/** One stop of a batch, as `stopWork` takes it. */
export interface StopCall {
  environmentId: string;
  workId: string;
  force: boolean;
}

/**
 * `stopWork`'s write for several items, as CTEs of the batched lease-holder statement
 * (`wireWritesMany`), ending in `stopped` (`op`, the `Work` columns, `callsOpen`): each forced
 * or graceful as its call asks, exactly as `stopWork` stops it alone, decided on the item's
 * state before the statement. A graceful stop of an active item winds down through
 * `stopping` and keeps its lease; every other stop ends the item now. An item not visible,
 * or already past the requested transition, is absent: `stopWork` alone tells which.
 */
export function stopManyCtes(doc: string | Placeholder): SQL {
  return sql`stop_in AS MATERIALIZED (
        SELECT * FROM jsonb_to_recordset(${doc}::jsonb) AS b(id text, env text, force boolean)
      ), stopped AS (
        UPDATE work_items w
           SET state = CASE WHEN NOT b.force AND w.state = 'active' THEN 'stopping' ELSE 'stopped' END,
               stop_requested_at = coalesce(w.stop_requested_at, now()),
               stopped_at = CASE WHEN NOT b.force AND w.state = 'active' THEN w.stopped_at ELSE now() END,
               lease_expires_at = CASE WHEN NOT b.force AND w.state = 'active' THEN w.lease_expires_at END,
               updated_at = now()
          FROM stop_in b
         WHERE ${wireScopeOf('stop_in')}
           AND CASE WHEN b.force THEN w.state <> 'stopped' ELSE w.state IN ('queued', 'starting', 'active') END
        RETURNING 'stop' AS op, ${WORK_COLUMNS}, ${CALLS_OPEN}
      )`;
}

/** The JSON document `stopManyCtes` reads: one entry per call. */
export function stopDoc(calls: readonly StopCall[]): string {
  return JSON.stringify(calls.map((c) => ({ id: c.workId, env: c.environmentId, force: c.force })));
}
