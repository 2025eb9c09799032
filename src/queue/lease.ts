/**
 * The claim lane's writes by a holder: extend, complete, requeue and assert. Each matches
 * the holder's proof — the exact `lease_expires_at` it last received — by equality, so a
 * holder whose lease lapsed and was reclaimed, or whose item was finished or cancelled,
 * gets `LeaseLostError` instead of silently writing over the new holder's work.
 */
import { sql } from 'drizzle-orm';
import { fixedSql } from '../db/fixed-sql.js';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { instantParts } from '../db/instant.js';
import { interval, ts } from '../db/time.js';
import { withSpan } from '../telemetry/tracing.js';
import { LeaseLostError } from './errors.js';
import { HELD } from './sql.js';
import type { Item, Timestamp } from './types.js';

/** The span attributes of a holder's write. */
const held = (item: Item) => ({ 'work.id': item.id, 'environment.id': item.environmentId });

/** What a holder's statement binds for HELD (sql.ts). */
type Proof = 'id' | 'local' | 'offset';

/**
 * The values HELD binds for `item`. A proof that names no instant can never be the current
 * lease: the holder is told so at once, and nothing is sent.
 */
export function proofOf(item: Item): Record<Proof, string | number> {
  const parts = instantParts(item.lease);
  if (!parts) throw new LeaseLostError(item.id, 'the lease is not a proof this queue issued');
  return { id: item.id, local: parts.local, offset: parts.offsetMinutes };
}

// Each statement rendered once (fixed-sql.ts): a holder's call fills in its item and proof.
const EXTEND = fixedSql<Proof | 'ttlMs'>(
  sql`UPDATE work_items SET lease_expires_at = now() + ${interval(sql.placeholder('ttlMs'))}, updated_at = now()
       WHERE ${HELD}
   RETURNING ${sql.raw(ts('lease_expires_at'))} AS lease`,
);
const HAND_BACK = {
  stopped: fixedSql<Proof>(
    sql`UPDATE work_items SET state = ${'stopped'}, lease_expires_at = NULL, updated_at = now(), stopped_at = now()
         WHERE ${HELD} RETURNING 1 AS ok`,
  ),
  queued: fixedSql<Proof>(
    sql`UPDATE work_items SET state = ${'queued'}, lease_expires_at = NULL, updated_at = now(), stopped_at = NULL
         WHERE ${HELD} RETURNING 1 AS ok`,
  ),
};
const ASSERT_LEASE = fixedSql<Proof>(sql`SELECT 1 AS ok FROM work_items WHERE ${HELD} FOR UPDATE`);

/**
 * Renews the lease to `ttlMs` from now and stores the new proof in `item.lease`. No
 * wall-clock check: a lapsed lease nobody reclaimed yet is still this holder's to renew.
 */
export function extend(db: SqlHandle, item: Item, ttlMs: number): Promise<Timestamp> {
  return withSpan('queue.extend', held(item), async () => {
    const row = await maybeRow<{ lease: Timestamp }>(db, EXTEND({ ...proofOf(item), ttlMs }));
    if (!row) throw new LeaseLostError(item.id);
    item.lease = row.lease;
    return row.lease;
  });
}

/**
 * Marks the item finished, in the caller's transaction when given one, so a settlement and
 * the completion of its item commit together. A lost lease is an error: the holder's work
 * may have raced its replacement's and must not count as cleanly finished.
 */
export function complete(db: SqlHandle, item: Item): Promise<void> {
  return withSpan('queue.complete', held(item), () => handBack(db, item, 'stopped'));
}

/**
 * Hands the item back to the queue under the same id (next claim: `reclaimed: false`):
 * the holder found follow-on work for the session that its live slot would otherwise
 * suppress.
 */
export function requeue(db: SqlHandle, item: Item): Promise<void> {
  return withSpan('queue.requeue', held(item), () => handBack(db, item, 'queued'));
}

async function handBack(db: SqlHandle, item: Item, state: 'stopped' | 'queued'): Promise<void> {
  const row = await maybeRow(db, HAND_BACK[state](proofOf(item)));
  if (!row) throw new LeaseLostError(item.id);
}

/**
 * Proves, inside the caller's transaction, that the holder still owns the item, and locks
 * the row until that transaction ends. An unlocked read would be a proof only at the instant
 * it ran; with the lock a concurrent claim (SKIP LOCKED) passes the row by even if its lease
 * has lapsed, and a reclaim that got there first has already moved the lease this read
 * compares. Given a pool instead of a transaction it is a bare check.
 */
export function assertLease(db: SqlHandle, item: Item): Promise<void> {
  return withSpan('queue.assert_lease', held(item), async () => {
    const row = await maybeRow(db, ASSERT_LEASE(proofOf(item)));
    if (!row) throw new LeaseLostError(item.id);
  });
}
