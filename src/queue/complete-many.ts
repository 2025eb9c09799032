import { sql } from 'drizzle-orm';
import { rows, type SqlHandle } from '../db/handle.js';
import { instantParts } from '../db/instant.js';
import { withSpan } from '../telemetry/tracing.js';
import type { Item } from './types.js';

/** What `completeMany` did: ids finished under their holder's proof, and ids whose lease was lost. */
export interface CompleteManyResult {
  completed: string[];
  lost: string[];
}

/**
 * Completes a batch of held items in one statement, each fenced by its own proof exactly as
 * `complete` fences one: an item whose lease lapsed and was reclaimed, or that was cancelled,
 * is left alone and reported in `lost` (not thrown: the rest of the batch did finish, and
 * the caller must know which ones did not). Runs on the handle it is given, so inside a
 * transaction the completions commit with the caller's writes.
 *
 * The proofs travel as one JSON document so the statement is the same on every driver; each
 * proof is bound as local time plus offset (`instantParts`), as single writes bind theirs.
 */
export function completeMany(db: SqlHandle, items: readonly Item[]): Promise<CompleteManyResult> {
  return withSpan('queue.complete_many', { 'work.batch_size': items.length }, async (span) => {
    const proofs: Array<{ id: string; local: string; off: number }> = [];
    const lost: string[] = [];
    for (const item of items) {
      const parts = instantParts(item.lease);
      if (parts) proofs.push({ id: item.id, local: parts.local, off: parts.offsetMinutes });
      else lost.push(item.id);
    }
    if (proofs.length === 0) return { completed: [], lost };
    // `id = ANY(…)` keeps every plan on the primary key: prepared, the statement may run on a
    // generic plan made from statistics taken when nothing was active, which otherwise scans
    // work_items for active rows and re-reads the proofs for each one.
    const done = await rows<{ id: string }>(
      db,
      sql`WITH p AS MATERIALIZED (
        SELECT * FROM jsonb_to_recordset(${JSON.stringify(proofs)}::jsonb) AS p(id text, local timestamp, off integer)
      )
      UPDATE work_items w
         SET state = 'stopped', lease_expires_at = NULL, updated_at = now(), stopped_at = now()
        FROM p
       WHERE w.id = ANY (ARRAY(SELECT id FROM p)) AND w.id = p.id AND w.state = 'active'
         AND w.lease_expires_at = ((p.local - make_interval(mins => p.off)) AT TIME ZONE 'UTC')
      RETURNING w.id`,
    );
    const finished = new Set(done.map((r) => r.id));
    for (const p of proofs) if (!finished.has(p.id)) lost.push(p.id);
    span.setAttributes({ 'work.completed': finished.size, 'work.lost': lost.length });
    return { completed: proofs.filter((p) => finished.has(p.id)).map((p) => p.id), lost };
  });
}
