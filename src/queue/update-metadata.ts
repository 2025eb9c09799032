import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { withSpan } from '../telemetry/tracing.js';
import { MetadataLimitError, WorkNotFoundError } from './errors.js';
import { WORK_COLUMNS, wireScope } from './sql.js';
import type { Work } from './types.js';

export interface UpdateMetadataOptions {
  /**
   * The most keys the item may hold once the patch is applied; a patch that would exceed it
   * changes nothing and throws `MetadataLimitError`. Absent → no cap (the queue itself has
   * none; the work API sets one, since patches otherwise accumulate without bound).
   */
  maxPairs?: number;
}

/**
 * Applies a metadata patch — `upserts` set keys, `deletes` remove them — in one atomic
 * UPDATE (`(metadata || upserts) - deletes`), so a concurrent state transition or a second
 * patch on the same row can never be lost to a read-modify-write. The key cap is a predicate
 * of that same UPDATE, so it is checked against the row version being written (PostgreSQL
 * re-checks it after waiting on a concurrent patch): racing patches cannot overshoot it.
 * Orthogonal to lifecycle: any visible item in any state. Not visible → `WorkNotFoundError`.
 */
export function updateMetadata(
  db: SqlHandle,
  environmentId: string,
  workId: string,
  upserts: Record<string, string>,
  deletes: readonly string[],
  options: UpdateMetadataOptions = {},
): Promise<Work> {
  const attributes = { 'environment.id': environmentId, 'work.id': workId };
  return withSpan('queue.update_metadata', attributes, async () => {
    const patched = sql`(w.metadata || ${JSON.stringify(upserts)}::jsonb)
                          - ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(deletes)}::jsonb))`;
    const { maxPairs } = options;
    const fits =
      maxPairs === undefined
        ? sql``
        : sql`AND (SELECT count(*) FROM jsonb_object_keys(${patched})) <= ${maxPairs}`;
    const work = await maybeRow<Work>(
      db,
      sql`UPDATE work_items w
           SET metadata = ${patched},
               updated_at = now()
         WHERE ${wireScope(environmentId, workId)} ${fits}
     RETURNING ${WORK_COLUMNS}`,
    );
    if (work) return work;
    // Nothing updated: tell a missing item from one the cap refused, on this path only.
    if (maxPairs !== undefined) {
      const visible = await maybeRow(
        db,
        sql`SELECT 1 FROM work_items w WHERE ${wireScope(environmentId, workId)}`,
      );
      if (visible) throw new MetadataLimitError(workId, maxPairs);
    }
    throw new WorkNotFoundError(workId);
  });
}
