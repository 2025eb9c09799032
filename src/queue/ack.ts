import { sql } from 'drizzle-orm';
import { fixedSql } from '../db/fixed-sql.js';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { interval } from '../db/time.js';
import { withSpan } from '../telemetry/tracing.js';
import { WorkNotFoundError } from './errors.js';
import { WORK_COLUMNS, wireScope } from './sql.js';
import type { Work } from './types.js';

/**
 * The startup lease an ack installs: how long a worker has between ack and its first
 * heartbeat before a poll may reclaim the item. The default heartbeat TTL (30 s), so a
 * starting item is reclaimed on a real lease, not on the short poll reservation.
 */
export const STARTUP_LEASE_MS = 30_000;

/** An ack's SET list on `w`: only the queued → starting edge writes (a re-ack changes nothing but updated_at). */
export const ACKED = sql`state = CASE WHEN w.state = 'queued' THEN 'starting' ELSE w.state END,
                 acknowledged_at = CASE WHEN w.state = 'queued' THEN now() ELSE w.acknowledged_at END,
                 lease_expires_at = CASE WHEN w.state = 'queued' THEN now() + ${interval(STARTUP_LEASE_MS)}
                                         ELSE w.lease_expires_at END,
                 updated_at = now()`;

/** The ack, rendered once (fixed-sql.ts). */
const ACK = fixedSql<'environmentId' | 'workId'>(
  sql`UPDATE work_items w
         SET ${ACKED}
       WHERE ${wireScope(sql.placeholder('environmentId'), sql.placeholder('workId'))}
   RETURNING ${WORK_COLUMNS}`,
);

/**
 * Acknowledges a polled item: queued → starting, stamping acknowledged_at and installing the
 * startup lease. Idempotent: only that edge writes, so a re-ack (or an ack of a later state)
 * returns the item unchanged. No prior poll is required. Not visible → `WorkNotFoundError`.
 */
export function ack(db: SqlHandle, environmentId: string, workId: string): Promise<Work> {
  return withSpan('queue.ack', { 'environment.id': environmentId, 'work.id': workId }, async () => {
    const work = await maybeRow<Work>(db, ACK({ environmentId, workId }));
    if (!work) throw new WorkNotFoundError(workId);
    return work;
  });
}
