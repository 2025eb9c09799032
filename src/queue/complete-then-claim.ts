import type { SqlHandle } from '../db/handle.js';
import { type CompleteAndClaimResult, completeAndClaim } from './complete-and-claim.js';
import { LeaseLostError } from './errors.js';
import { proofOf } from './lease.js';
import type { Item, WorkKind } from './types.js';

/**
 * `completeAndClaim` for a caller that cannot hold on to a lease it did not ask for: completes
 * the held `item` under its proof and, only when that completion happened, leases the oldest
 * available item of `kind` for `ttlMs` — the same one statement, its claim made to depend on
 * the completion. Returns the next item, or null when none is available. A lost lease throws
 * `LeaseLostError`, as `complete` does, and claims nothing.
 *
 * This is the platform lane's form of the worker loop: an HTTP client whose proof is refused
 * gets an error and no item, so a lease taken on its behalf would sit unworked until it
 * lapsed and come back `reclaimed`. The library's `completeAndClaim` hands the item out anyway,
 * because its caller can always take it.
 */
export async function completeThenClaim(
  db: SqlHandle,
  item: Item,
  kind: WorkKind,
  ttlMs: number,
): Promise<Item | null> {
  proofOf(item); // A proof this queue never issued is a lost lease, told at once, as `complete` tells it.
  const { completed, next }: CompleteAndClaimResult = await completeAndClaim(db, item, kind, ttlMs, {
    onlyIfCompleted: true,
  });
  if (!completed) throw new LeaseLostError(item.id);
  return next;
}
