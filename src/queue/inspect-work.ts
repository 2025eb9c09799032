import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { withSpan } from '../telemetry/tracing.js';
import { BROWSED_COLUMNS, type BrowsedWork } from './browse-work.js';

/** One item by id on either lane, or null: the operator's view, scoped by nothing but the id. */
export function inspectWork(db: SqlHandle, workId: string): Promise<BrowsedWork | null> {
  return withSpan('queue.inspect_work', { 'work.id': workId }, () =>
    maybeRow<BrowsedWork>(db, sql`SELECT ${BROWSED_COLUMNS} FROM work_items w WHERE w.id = ${workId}`),
  );
}
