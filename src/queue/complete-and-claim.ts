import { type SQL, sql } from 'drizzle-orm';
import { fixedSql } from '../db/fixed-sql.js';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { instantParts } from '../db/instant.js';
import { recordHandOut, withSpan } from '../telemetry/tracing.js';
import { claimedFor, HELD, ITEM_COLUMNS, pickClaimable } from './sql.js';
import type { Item, WorkKind } from './types.js';

/** What `completeAndClaim` did: whether the held item was completed, and the next item, if any. */
export interface CompleteAndClaimResult {
  /** False when the held item's lease was lost (it was left alone, as `complete` would). */
  completed: boolean;
  /** The next item of `kind`, leased for `ttlMs`; null when none is available. */
  next: Item | null;
}

/**
 * A worker loop's step in one statement: completes the held `item` under its proof, exactly
 * as `complete` does, and claims the oldest available item of `kind`, exactly as `claim`
 * does. One round trip and one commit per item instead of two of each — what a worker that
 * drains a lane one item at a time spends most of its time on.
 *
 * The claim does not depend on the completion: a lost lease (`completed: false`) still hands
 * out the next item, since the holder's work on the lost one is already over either way, and
 * the new lease must not be dropped on the floor. Give `db` a transaction to complete within
 * the caller's settlement, as with `complete`.
 *
 * `onlyIfCompleted` makes the claim depend on the completion instead (`completeThenClaim`, for
 * a caller that cannot keep a lease it did not ask for): no completion means no candidate
 * rows, nothing locked or leased.
 *
 * Either way the claim's candidate scans read `settled`, so the completion runs to its end
 * before the claim locks anything. Without that, PostgreSQL ran the claim first (the final
 * SELECT reads `claimed` before `done`), and a step waiting for its held row kept the next
 * item locked meanwhile. A claimer whose snapshot predates our claim can lock our held row
 * (it fails the recheck, but keeps the lock until it commits), so two such steps could wait
 * on each other: a deadlock, about once in a few hundred steps at 8–32 loops. A step that
 * waits only while it holds nothing can be in no cycle.
 */
export function completeAndClaim(
  db: SqlHandle,
  item: Item,
  kind: WorkKind,
  ttlMs: number,
  options: { onlyIfCompleted?: boolean } = {},
): Promise<CompleteAndClaimResult> {
  const attributes = { 'work.id': item.id, 'environment.id': item.environmentId, 'work.kind': kind };
  return withSpan('queue.complete_and_claim', attributes, async (span) => {
    // A proof this queue never issued completes nothing; the claim still runs.
    const proof = instantParts(item.lease);
    const step = STEPS[(proof ? 2 : 0) + (options.onlyIfCompleted ? 1 : 0)]!;
    const row = await maybeRow<Item & { completed: boolean; id: string | null }>(
      db,
      step({ id: item.id, local: proof?.local ?? null, offset: proof?.offsetMinutes ?? null, kind, ttlMs }),
    );
    const { completed, ...rest } = row!;
    const next = rest.id === null ? null : (rest as Item);
    span.setAttributes({ 'work.completed': completed, 'work.claimed': next !== null });
    if (next) {
      recordHandOut(next.traceContext, {
        'work.id': next.id,
        'environment.id': next.environmentId,
        'work.kind': kind,
      });
    }
    return { completed, next };
  });
}

const p = sql.placeholder;

/** The step's statement for a held item with a proof or without, claiming anyway or only after a completion. */
function stepStatement(withProof: boolean, onlyIfCompleted: boolean): SQL {
  const held = withProof ? HELD : sql`false`;
  // Never the held item again; and read `settled`, so the completion ends before any lock.
  const after = sql`AND id <> ${p('id')}
           AND ${onlyIfCompleted ? sql`(SELECT completed FROM settled)` : sql`(SELECT completed FROM settled) IS NOT NULL`}`;
  return sql`WITH done AS (
        UPDATE work_items
           SET state = 'stopped', lease_expires_at = NULL, updated_at = now(), stopped_at = now()
         WHERE ${held}
        RETURNING id
      ), settled AS (
        SELECT EXISTS (SELECT 1 FROM done) AS completed
      ), ${pickClaimable(p('kind'), 1, after)}, claimed AS (
        UPDATE work_items w
           SET ${claimedFor(p('ttlMs'))}
          FROM picked
         WHERE w.id = picked.id
        RETURNING ${ITEM_COLUMNS}, picked.state = 'active' AS reclaimed
      )
      SELECT settled.completed, claimed.*
        FROM settled LEFT JOIN claimed ON true`;
}

/** A worker loop's every step sends one of these (fixed: rendered once, `db/fixed-sql.ts`), by (proof, onlyIfCompleted). */
const STEPS = [false, true].flatMap((withProof) =>
  [false, true].map((onlyIfCompleted) =>
    fixedSql<'id' | 'local' | 'offset' | 'kind' | 'ttlMs'>(stepStatement(withProof, onlyIfCompleted)),
  ),
);
