import { sql } from 'drizzle-orm';
import { fixedSql } from '../db/fixed-sql.js';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { recordHandOut, withSpan } from '../telemetry/tracing.js';
import { claimedFor, ITEM_COLUMNS, pickClaimable } from './sql.js';
import type { Item, WorkKind } from './types.js';

/** The claim, rendered once (fixed-sql.ts), its LIMIT 1 written in. */
const CLAIM = fixedSql<'kind' | 'ttlMs'>(
  sql`WITH ${pickClaimable(sql.placeholder('kind'), 1)}
      UPDATE work_items w
         SET ${claimedFor(sql.placeholder('ttlMs'))}
        FROM picked
       WHERE w.id = picked.id
      RETURNING ${ITEM_COLUMNS}, picked.state = 'active' AS reclaimed`,
);

/**
 * Leases the oldest available item of `kind` on the claim lane for `ttlMs`, or returns null
 * when there is nothing to do. Available means queued, or active with a lapsed lease — its
 * holder died, so the item comes back with `reclaimed: true` and the new holder should
 * surface recovery before replaying. The id never changes on this lane: the lease itself is
 * the proof that fences the previous holder.
 *
 * One statement; `SKIP LOCKED` lets any number of claimants run at once without blocking on
 * each other or ever sharing an item. A self_hosted environment's tool_exec items are not on
 * this lane (they are polled), so a polled item is never also claimed.
 *
 * The item's trace context is the enqueuing span's; a claimant parents its work on it, and
 * the claim records the hand-out in that trace (`recordHandOut`).
 */
export function claim(db: SqlHandle, kind: WorkKind, ttlMs: number): Promise<Item | null> {
  return withSpan('queue.claim', { 'work.kind': kind }, async (span) => {
    const item = await maybeRow<Item>(db, CLAIM({ kind, ttlMs }));
    if (item) {
      const attributes = { 'work.id': item.id, 'environment.id': item.environmentId, 'work.kind': kind };
      span.setAttributes({ ...attributes, 'work.reclaimed': item.reclaimed });
      recordHandOut(item.traceContext, attributes);
    }
    return item;
  });
}
