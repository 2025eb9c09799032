import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { withSpan } from '../telemetry/tracing.js';
import { WorkNotFoundError } from './errors.js';
import { WORK_COLUMNS, wireScope } from './sql.js';
import type { Work } from './types.js';

/** One item visible to the work API, or `WorkNotFoundError` (missing and out-of-scope look alike). */
export function getWork(db: SqlHandle, environmentId: string, workId: string): Promise<Work> {
  return withSpan('queue.get_work', { 'environment.id': environmentId, 'work.id': workId }, async () => {
    const work = await maybeRow<Work>(
      db,
      sql`SELECT ${WORK_COLUMNS} FROM work_items w WHERE ${wireScope(environmentId, workId)}`,
    );
    if (!work) throw new WorkNotFoundError(workId);
    return work;
  });
}
