import { sql } from 'drizzle-orm';
import { fixedSqlByLimit } from '../db/fixed-sql.js';
import { rows, type SqlHandle } from '../db/handle.js';
import { recordHandOut, withSpan } from '../telemetry/tracing.js';
import { claimedBatch, pickClaimable } from './sql.js';
import type { Item, WorkKind } from './types.js';

/** The most items one batch claim may take: one statement's worth of row locks and rows. */
export const CLAIM_MANY_MAX = 1000;

const p = sql.placeholder;

/** The statement, rendered once for a batch of one and once for any other (fixed-sql.ts). */
const CLAIM = fixedSqlByLimit<'kind' | 'ttlMs'>(
  (limit) =>
    sql`WITH ${pickClaimable(p('kind'), limit)}, ${claimedBatch(p('ttlMs'))}
      SELECT id, "environmentId", "sessionId", kind, lease, claims, metadata, "traceContext", reclaimed
        FROM claimed ORDER BY created_at`,
);

/**
 * Leases up to `n` available items of `kind` on the claim lane in one statement, oldest
 * first, each with its own lease for `ttlMs` (its proof is the item's `lease`, so each can be
 * extended, completed or requeued on its own, or all together with `completeMany`). Returns
 * fewer items — or none — when fewer are available. Availability, reclaim and the id's
 * stability are those of `claim`; a batch just spends one round trip and one plan on many
 * hand-outs, which is what a worker with a local buffer wants.
 */
export function claimMany(db: SqlHandle, kind: WorkKind, n: number, ttlMs: number): Promise<Item[]> {
  if (!Number.isInteger(n) || n < 1 || n > CLAIM_MANY_MAX) {
    throw new RangeError(`claimMany takes 1 to ${CLAIM_MANY_MAX} items, not ${n}`);
  }
  return withSpan('queue.claim_many', { 'work.kind': kind, 'work.batch_size': n }, async (span) => {
    const items = await rows<Item>(db, CLAIM({ kind, n, ttlMs }));
    span.setAttribute('work.claimed', items.length);
    for (const item of items) {
      recordHandOut(item.traceContext, {
        'work.id': item.id,
        'environment.id': item.environmentId,
        'work.kind': kind,
      });
    }
    return items;
  });
}
