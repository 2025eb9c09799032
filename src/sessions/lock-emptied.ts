import { sql } from 'drizzle-orm';
import { rows, type SqlHandle } from '../db/handle.js';
import { interval } from '../db/time.js';

/**
 * Locks at most `batch` platform-lane sessions emptied longer ago than `retainMs`, the longest
 * emptied first (sessions_emptied_idx), and returns their ids; SKIP LOCKED passes over one
 * another run holds, or one an enqueue's foreign key check holds. Only the first statement of
 * the deletion's transaction: whether each is still empty is read by the next statement,
 * whose snapshot is taken with the rows locked (`deleteEmptiedSessions`).
 */
export async function lockEmptiedSessions(db: SqlHandle, retainMs: number, batch: number): Promise<string[]> {
  const picked = await rows<{ id: string }>(
    db,
    sql`SELECT s.id FROM sessions s
         WHERE s.emptied_at < now() - ${interval(retainMs)}
         ORDER BY s.emptied_at, s.id
         LIMIT ${batch}
         FOR UPDATE OF s SKIP LOCKED`,
  );
  return picked.map((r) => r.id);
}
