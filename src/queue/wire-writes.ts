import { sql } from 'drizzle-orm';
import { fixedSql } from '../db/fixed-sql.js';
import { rows, type SqlHandle } from '../db/handle.js';
import { withSpan } from '../telemetry/tracing.js';
import { type AckCall, ackDoc, ackManyCtes } from './ack-many.js';
import { heartbeatResult } from './heartbeat.js';
import { type HeartbeatCall, heartbeatDoc, heartbeatManyCtes } from './heartbeat-many.js';
import { type StopCall, stopDoc, stopManyCtes } from './stop-many.js';
import type { HeartbeatResult, Work } from './types.js';

/** A lease-holder write of the work API, as its caller asked for it. */
export type WireWrite =
  | ({ op: 'ack' } & AckCall)
  | ({ op: 'heartbeat' } & HeartbeatCall)
  | ({ op: 'stop' } & StopCall);

/** What each write answers alone: `ack`'s item, `heartbeat`'s result, `stopWork`'s item and open calls. */
export type WireWriteAnswer =
  | { op: 'ack'; work: Work }
  | { op: 'heartbeat'; result: HeartbeatResult }
  | { op: 'stop'; work: Work; callsOpen: boolean };

type Row = Work & { op: WireWrite['op']; callsOpen: boolean | null };

/**
 * Acks, heartbeats and stops of distinct items in one statement: each item written exactly
 * as its own operation writes it alone (`ackManyCtes`, `heartbeatManyCtes`, `stopManyCtes`).
 * Answers the writes that took, by item id; a write that did not (an item not visible, a
 * failed precondition, a stop already past) is absent, and its operation alone says why.
 *
 * Each kind's calls travel as one JSON document, empty when there are none, so the statement
 * is the same text for every mix and size (one prepared plan on every driver); `id = ANY(…)`
 * keeps each update on the primary key. One item may appear once: two writes of one row in
 * one statement would keep only one of them.
 *
 * Each update locks its rows in the order of its document, sorted by id, so two batches lock
 * a kind's rows in one order; should a deadlock still fail one (the same items written by
 * other kinds elsewhere at once), it wrote nothing, and the fold re-runs its writes alone
 * (db/fold.ts).
 */
export function wireWritesMany(
  db: SqlHandle,
  writes: readonly WireWrite[],
): Promise<Map<string, WireWriteAnswer>> {
  return withSpan('queue.wire_writes_many', { 'work.batch_size': writes.length }, async () => {
    const byId = new Map<string, WireWrite>();
    for (const w of writes) {
      if (byId.has(w.workId)) throw new TypeError(`wireWritesMany: ${w.workId} appears twice`);
      byId.set(w.workId, w);
    }
    const sorted = [...writes].sort((a, b) => (a.workId < b.workId ? -1 : 1));
    const of = <K extends WireWrite['op']>(op: K) =>
      sorted.filter((w): w is Extract<WireWrite, { op: K }> => w.op === op);
    const written = await rows<Row>(
      db,
      WRITES({ acks: ackDoc(of('ack')), beats: heartbeatDoc(of('heartbeat')), stops: stopDoc(of('stop')) }),
    );
    const answers = new Map<string, WireWriteAnswer>();
    for (const { op, callsOpen, ...work } of written) {
      const asked = byId.get(work.id)!;
      if (op === 'ack') answers.set(work.id, { op, work });
      else if (op === 'stop') answers.set(work.id, { op, work, callsOpen: callsOpen === true });
      else {
        const ttlSeconds = (asked as HeartbeatCall).ttlSeconds;
        answers.set(work.id, {
          op,
          result: heartbeatResult({ lastHeartbeat: work.lastHeartbeat!, state: work.state }, ttlSeconds),
        });
      }
    }
    return answers;
  });
}

const p = sql.placeholder;

/** The one statement of every batch (fixed: rendered once, `db/fixed-sql.ts`). */
const WRITES = fixedSql<'acks' | 'beats' | 'stops'>(
  sql`WITH ${ackManyCtes(p('acks'))}, ${heartbeatManyCtes(p('beats'))}, ${stopManyCtes(p('stops'))}
          SELECT * FROM acked UNION ALL SELECT * FROM beaten UNION ALL SELECT * FROM stopped`,
);
