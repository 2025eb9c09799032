import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { withSpan } from '../telemetry/tracing.js';
import { WorkNotFoundError } from './errors.js';
import { WORK_COLUMNS, wireScope } from './sql.js';
import type { Work } from './types.js';

/**
 * Applies a metadata patch — `upserts` set keys, `deletes` remove them — in one atomic
 * UPDATE (`(metadata || upserts) - deletes`), so a concurrent state transition or a second
 * patch on the same row can never be lost to a read-modify-write. Orthogonal to lifecycle:
 * any visible item in any state. Not visible → `WorkNotFoundError`.
 */
export function updateMetadata(
  db: SqlHandle,
  environmentId: string,
  workId: string,
  upserts: Record<string, string>,
  deletes: readonly string[],
): Promise<Work> {
  const attributes = { 'environment.id': environmentId, 'work.id': workId };
  return withSpan('queue.update_metadata', attributes, async () => {
    const work = await maybeRow<Work>(
      db,
      sql`UPDATE work_items w
           SET metadata = (w.metadata || ${JSON.stringify(upserts)}::jsonb)
                          - ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(deletes)}::jsonb)),
               updated_at = now()
         WHERE ${wireScope(environmentId, workId)}
     RETURNING ${WORK_COLUMNS}`,
    );
    if (!work) throw new WorkNotFoundError(workId);
    return work;
  });
}
