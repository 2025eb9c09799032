import { type SQL, sql } from 'drizzle-orm';
import { interval } from '../db/time.js';
import { STARTUP_LEASE_MS } from './ack.js';
import { WORK_COLUMNS } from './sql.js';

/** One ack of a batch: the item and the environment whose key asked. */
export interface AckCall {
  environmentId: string;
  workId: string;
}

/**
 * `ack`'s write for several items, as CTEs of the batched lease-holder statement
 * (`wireWritesMany`), ending in `acked` (`op`, the `Work` columns, `callsOpen`): each item is
 * acked exactly as `ack` acks it alone (the same edge, the same stamps, the same startup
 * lease). An item not visible to its call's environment is absent, as `ack` alone would not
 * find it.
 */
export function ackManyCtes(calls: readonly AckCall[]): SQL {
  const doc = calls.map((c) => ({ id: c.workId, env: c.environmentId }));
  return sql`ack_in AS MATERIALIZED (
        SELECT * FROM jsonb_to_recordset(${JSON.stringify(doc)}::jsonb) AS b(id text, env text)
      ), acked AS (
        UPDATE work_items w
           SET state = CASE WHEN w.state = 'queued' THEN 'starting' ELSE w.state END,
               acknowledged_at = CASE WHEN w.state = 'queued' THEN now() ELSE w.acknowledged_at END,
               lease_expires_at = CASE WHEN w.state = 'queued' THEN now() + ${interval(STARTUP_LEASE_MS)}
                                       ELSE w.lease_expires_at END,
               updated_at = now()
          FROM ack_in b
         WHERE w.id = ANY (ARRAY(SELECT id FROM ack_in)) AND w.id = b.id AND w.environment_id = b.env
           AND w.lane = 'poll'
        RETURNING 'ack' AS op, ${WORK_COLUMNS}, NULL::boolean AS "callsOpen"
      )`;
}
