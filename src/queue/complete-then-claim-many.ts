import { sql } from 'drizzle-orm';
import { fixedSqlByLimit } from '../db/fixed-sql.js';
import { rows, type SqlHandle } from '../db/handle.js';
import { recordHandOut, withSpan } from '../telemetry/tracing.js';
import { completedCtes, proofsDoc, proofsOf } from './complete-many.js';
import { claimedBatch, pickClaimable } from './sql.js';
import type { Item, WorkKind } from './types.js';

/** What a batch of steps did: the held items it completed, and the items it leased, oldest first. */
export interface StepsResult {
  completed: string[];
  next: Item[];
}

const p = sql.placeholder;

/**
 * The statement, rendered once for one holder and once for a batch (fixed-sql.ts). Its values:
 * the proofs' document, the kind, the batch's size, the lease.
 */
const STEPS = fixedSqlByLimit<'proofs' | 'kind' | 'ttlMs'>(
  (limit) =>
    sql`WITH ${completedCtes(p('proofs'))}, settled AS (
        SELECT count(*)::int AS n, coalesce(jsonb_agg(id), '[]'::jsonb) AS ids FROM done
      ), ${pickClaimable(
        p('kind'),
        limit,
        sql`AND id <> ALL (ARRAY(SELECT id FROM p)) AND (SELECT n FROM settled) > 0`,
        sql`(SELECT n FROM settled)`,
      )}, ${claimedBatch(p('ttlMs'))}
      SELECT settled.ids AS completed, claimed.id, "environmentId", "sessionId", kind, lease, claims,
             metadata, "traceContext", reclaimed
        FROM settled LEFT JOIN claimed ON true
       ORDER BY claimed.created_at`,
);

/**
 * `completeThenClaim` for a batch of holders in one statement: completes each held item under
 * its own proof, exactly as `complete` does, then leases one available item of `kind` for
 * `ttlMs` per completion it made, oldest first, exactly as `claim` does — never one of the
 * held items, and nothing for a holder whose lease was lost, so no lease is taken on behalf of
 * a caller who will be told it lost its own.
 *
 * As in the one-item form, the candidate scans read `settled`, so every completion has ended
 * before the claim locks anything: a batch waits only while it holds no claimed row.
 */
export function completeThenClaimMany(
  db: SqlHandle,
  held: readonly Item[],
  kind: WorkKind,
  ttlMs: number,
): Promise<StepsResult> {
  return withSpan(
    'queue.complete_then_claim_many',
    { 'work.kind': kind, 'work.batch_size': held.length },
    async (span) => {
      const { proofs } = proofsOf(held);
      if (proofs.length === 0) return { completed: [], next: [] };
      const found = await rows<Item & { completed: string[]; id: string | null }>(
        db,
        STEPS({ proofs: proofsDoc(proofs), kind, n: proofs.length, ttlMs }),
      );
      const completed = found[0]?.completed ?? [];
      const next = found.filter((r) => r.id !== null).map(({ completed: _, ...item }) => item as Item);
      span.setAttributes({ 'work.completed': completed.length, 'work.claimed': next.length });
      for (const item of next) {
        recordHandOut(item.traceContext, {
          'work.id': item.id,
          'environment.id': item.environmentId,
          'work.kind': kind,
        });
      }
      return { completed, next };
    },
  );
}
