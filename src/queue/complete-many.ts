import { type Placeholder, type SQL, sql } from 'drizzle-orm';
import { fixedSql } from '../db/fixed-sql.js';
import { rows, type SqlHandle } from '../db/handle.js';
import { instantParts } from '../db/instant.js';
import { withSpan } from '../telemetry/tracing.js';
import type { Item } from './types.js';

/** What `completeMany` did: ids finished under their holder's proof, and ids whose lease was lost. */
export interface CompleteManyResult {
  completed: string[];
  lost: string[];
}

/** A held item's proof as the batch statements bind it: local time plus offset (`instantParts`). */
export interface Proof {
  id: string;
  local: string;
  off: number;
}

/** The proofs of `items`, and the ids of those whose lease is no proof this queue issued (lost at once). */
export function proofsOf(items: readonly Item[]): { proofs: Proof[]; unproven: string[] } {
  const proofs: Proof[] = [];
  const unproven: string[] = [];
  for (const item of items) {
    const parts = instantParts(item.lease);
    if (parts) proofs.push({ id: item.id, local: parts.local, off: parts.offsetMinutes });
    else unproven.push(item.id);
  }
  return { proofs, unproven };
}

/**
 * The proofs as the completions read them: one JSON document, so the statement is the same on
 * every driver, sorted by id so that every batch locks its rows in one order.
 */
export function proofsDoc(proofs: readonly Proof[]): string {
  return JSON.stringify([...proofs].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)));
}

/**
 * The completions of a batch as CTEs: `p` (the proofs, `proofsDoc`), then `done (id)`, the
 * items finished under them, each fenced by its own proof exactly as `complete` fences one.
 *
 * `id = ANY(…)` keeps every plan on the primary key: prepared, the statement may run on a
 * generic plan made from statistics taken when nothing was active, which otherwise scans
 * work_items for active rows and re-reads the proofs for each one.
 */
export function completedCtes(doc: string | Placeholder): SQL {
  return sql`p AS MATERIALIZED (
        SELECT * FROM jsonb_to_recordset(${doc}::jsonb) AS p(id text, local timestamp, off integer)
      ), done AS (
        UPDATE work_items w
           SET state = 'stopped', lease_expires_at = NULL, updated_at = now(), stopped_at = now()
          FROM p
         WHERE w.id = ANY (ARRAY(SELECT id FROM p)) AND w.id = p.id AND w.state = 'active'
           AND w.lease_expires_at = ((p.local - make_interval(mins => p.off)) AT TIME ZONE 'UTC')
        RETURNING w.id
      )`;
}

/** The batch completion, rendered once (fixed-sql.ts): its one value is the proofs' document. */
const COMPLETE_MANY = fixedSql<'proofs'>(
  sql`WITH ${completedCtes(sql.placeholder('proofs'))} SELECT id FROM done`,
);

/**
 * Completes a batch of held items in one statement, each fenced by its own proof exactly as
 * `complete` fences one: an item whose lease lapsed and was reclaimed, or that was cancelled,
 * is left alone and reported in `lost` (not thrown: the rest of the batch did finish, and
 * the caller must know which ones did not). Runs on the handle it is given, so inside a
 * transaction the completions commit with the caller's writes.
 */
export function completeMany(db: SqlHandle, items: readonly Item[]): Promise<CompleteManyResult> {
  return withSpan('queue.complete_many', { 'work.batch_size': items.length }, async (span) => {
    const { proofs, unproven: lost } = proofsOf(items);
    if (proofs.length === 0) return { completed: [], lost };
    const done = await rows<{ id: string }>(db, COMPLETE_MANY({ proofs: proofsDoc(proofs) }));
    const finished = new Set(done.map((r) => r.id));
    for (const p of proofs) if (!finished.has(p.id)) lost.push(p.id);
    span.setAttributes({ 'work.completed': finished.size, 'work.lost': lost.length });
    return { completed: proofs.filter((p) => finished.has(p.id)).map((p) => p.id), lost };
  });
}
