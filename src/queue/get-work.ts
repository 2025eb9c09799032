import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { WorkNotFoundError } from './errors.js';
import { WORK_COLUMNS, wireScope } from './sql.js';
import type { Work } from './types.js';

/** One item visible to the work API, or `WorkNotFoundError` (missing and out-of-scope look alike). */
export async function getWork(db: SqlHandle, environmentId: string, workId: string): Promise<Work> {
  const work = await maybeRow<Work>(
    db,
    sql`SELECT ${WORK_COLUMNS} FROM work_items w WHERE ${wireScope(environmentId, workId)}`,
  );
  if (!work) throw new WorkNotFoundError(workId);
  return work;
}
