import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { instant } from '../db/instant.js';
import { recordHandOut, withSpan } from '../telemetry/tracing.js';
import { LeaseLostError } from './errors.js';
import { claimable, claimedFor, ITEM_COLUMNS } from './sql.js';
import type { Item, WorkKind } from './types.js';

/**
 * `completeAndClaim` for a caller that cannot hold on to a lease it did not ask for: completes
 * the held `item` under its proof and, only when that completion happened, leases the oldest
 * available item of `kind` for `ttlMs` — one statement, one commit. Returns the next item, or
 * null when none is available. A lost lease throws `LeaseLostError`, as `complete` does, and
 * claims nothing.
 *
 * This is the platform lane's form of the worker loop: an HTTP client whose proof is refused
 * gets an error and no item, so a lease taken on its behalf would sit unworked until it
 * lapsed and come back `reclaimed`. The library's `completeAndClaim` hands the item out anyway,
 * because its caller can always take it.
 */
export function completeThenClaim(
  db: SqlHandle,
  item: Item,
  kind: WorkKind,
  ttlMs: number,
): Promise<Item | null> {
  const attributes = { 'work.id': item.id, 'environment.id': item.environmentId, 'work.kind': kind };
  return withSpan('queue.complete_then_claim', attributes, async (span) => {
    const proof = instant(item.lease);
    if (!proof) throw new LeaseLostError(item.id, 'the lease is not a proof this queue issued');
    // `picked` reads `done`, so the claim sees the completion's outcome within the statement:
    // no completion, no candidate rows, nothing locked or leased.
    const row = await maybeRow<Item & { completed: boolean; id: string | null }>(
      db,
      sql`WITH done AS (
        UPDATE work_items
           SET state = 'stopped', lease_expires_at = NULL, updated_at = now(), stopped_at = now()
         WHERE id = ${item.id} AND state = 'active' AND lease_expires_at = ${proof}
        RETURNING id
      ), picked AS (
        SELECT id, state FROM work_items
         WHERE ${claimable(kind)}
           AND id <> ${item.id}
           AND EXISTS (SELECT 1 FROM done)
         ORDER BY created_at
         LIMIT 1
         FOR UPDATE SKIP LOCKED
      ), claimed AS (
        UPDATE work_items w
           SET ${claimedFor(ttlMs)}
          FROM picked
         WHERE w.id = picked.id
        RETURNING ${ITEM_COLUMNS}, picked.state = 'active' AS reclaimed
      )
      SELECT EXISTS (SELECT 1 FROM done) AS completed, claimed.*
        FROM (SELECT 1) AS one LEFT JOIN claimed ON true`,
    );
    const { completed, ...rest } = row!;
    if (!completed) throw new LeaseLostError(item.id);
    const next = rest.id === null ? null : (rest as Item);
    span.setAttribute('work.claimed', next !== null);
    if (next) {
      recordHandOut(next.traceContext, {
        'work.id': next.id,
        'environment.id': next.environmentId,
        'work.kind': kind,
      });
    }
    return next;
  });
}
