import { type Placeholder, type SQL, sql } from 'drizzle-orm';
import { instantParts } from '../db/instant.js';
import { WORK_COLUMNS, wireScopeOf } from './sql.js';
import { NO_HEARTBEAT } from './types.js';

/** One heartbeat of a batch, as `heartbeat` takes it. */
export interface HeartbeatCall {
  environmentId: string;
  workId: string;
  /** `NO_HEARTBEAT`, or the last_heartbeat the worker was given. */
  expected: string;
  ttlSeconds: number;
}

/**
 * `heartbeat`'s write for several items, as CTEs of the batched lease-holder statement
 * (`wireWritesMany`), ending in `beaten` (`op`, the `Work` columns, `callsOpen`): each under
 * its own precondition and ttl, exactly as `heartbeat` writes it alone. `NO_HEARTBEAT` makes a
 * just-acked item active; an echo equal to the row's last_heartbeat extends an active item's
 * lease, and leaves a stopping or stopped one as it is (the worker learns of the stop). A call
 * whose precondition fails, whose echo is not a timestamp, or whose item is not visible, is
 * absent: `heartbeat` alone tells which.
 *
 * Echoes are bound as local time and offset, as `heartbeat` binds one (`instantParts`). The
 * new last_heartbeat of a later heartbeat is strictly after the echo, as `heartbeat` makes
 * it: a superseded echo must never match again.
 */
export function heartbeatManyCtes(doc: string | Placeholder): SQL {
  // Absent `local`: the first heartbeat.
  return sql`heartbeat_in AS MATERIALIZED (
        SELECT * FROM jsonb_to_recordset(${doc}::jsonb)
            AS b(id text, env text, ttl_ms double precision, local timestamp, off integer)
      ), beaten AS (
        UPDATE work_items w
           SET state = CASE WHEN b.local IS NULL THEN 'active' ELSE w.state END,
               last_heartbeat = CASE WHEN b.local IS NULL THEN now()
                                     WHEN w.state = 'active'
                                     THEN greatest(now(), w.last_heartbeat + interval '1 microsecond')
                                     ELSE w.last_heartbeat END,
               started_at = CASE WHEN b.local IS NULL THEN now() ELSE w.started_at END,
               heartbeats = CASE WHEN b.local IS NULL THEN 1
                                 WHEN w.state = 'active' THEN w.heartbeats + 1 ELSE w.heartbeats END,
               lease_expires_at = CASE WHEN b.local IS NULL OR w.state = 'active'
                                       THEN now() + b.ttl_ms * interval '1 millisecond'
                                       ELSE w.lease_expires_at END,
               updated_at = now()
          FROM heartbeat_in b
         WHERE ${wireScopeOf('heartbeat_in')}
           AND CASE WHEN b.local IS NULL THEN w.state = 'starting' AND w.last_heartbeat IS NULL
                    ELSE w.last_heartbeat = ((b.local - make_interval(mins => b.off)) AT TIME ZONE 'UTC') END
        RETURNING 'heartbeat' AS op, ${WORK_COLUMNS}, NULL::boolean AS "callsOpen"
      )`;
}

/**
 * The JSON document `heartbeatManyCtes` reads: one entry per call, its echo bound as local
 * time and offset; a call whose echo is not a timestamp is left out (it can match nothing).
 */
export function heartbeatDoc(calls: readonly HeartbeatCall[]): string {
  const doc: Array<{ id: string; env: string; ttl_ms: number; local?: string; off?: number }> = [];
  for (const c of calls) {
    const entry = { id: c.workId, env: c.environmentId, ttl_ms: c.ttlSeconds * 1000 };
    if (c.expected !== NO_HEARTBEAT) {
      const parts = instantParts(c.expected);
      if (!parts) continue;
      Object.assign(entry, { local: parts.local, off: parts.offsetMinutes });
    }
    doc.push(entry);
  }
  return JSON.stringify(doc);
}
