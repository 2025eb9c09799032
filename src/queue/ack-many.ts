import { type Placeholder, type SQL, sql } from 'drizzle-orm';
import { ACKED } from './ack.js';
import { WORK_COLUMNS, wireScopeOf } from './sql.js';

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
export function ackManyCtes(doc: string | Placeholder): SQL {
  return sql`ack_in AS MATERIALIZED (
        SELECT * FROM jsonb_to_recordset(${doc}::jsonb) AS b(id text, env text)
      ), acked AS (
        UPDATE work_items w
           SET ${ACKED}
          FROM ack_in b
         WHERE ${wireScopeOf('ack_in')}
        RETURNING 'ack' AS op, ${WORK_COLUMNS}, NULL::boolean AS "callsOpen"
      )`;
}

/** The JSON document `ackManyCtes` reads: one entry per call. */
export function ackDoc(calls: readonly AckCall[]): string {
  return JSON.stringify(calls.map((c) => ({ id: c.workId, env: c.environmentId })));
}
