import { sql } from 'drizzle-orm';
import { rows, type SqlHandle } from '../db/handle.js';
import { withSpan } from '../telemetry/tracing.js';
import { BROWSED_COLUMNS, type BrowsedWork } from './browse-work.js';

/** The session's items, newest first, at most `limit` (the session index serves it). */
export function sessionWork(db: SqlHandle, sessionId: string, limit: number): Promise<BrowsedWork[]> {
  return withSpan('queue.session_work', { 'session.id': sessionId }, () =>
    rows<BrowsedWork>(
      db,
      sql`SELECT ${BROWSED_COLUMNS} FROM work_items w WHERE w.session_id = ${sessionId}
           ORDER BY w.created_at DESC, w.id DESC LIMIT ${limit}`,
    ),
  );
}
