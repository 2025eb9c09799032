import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { ts } from '../db/time.js';
import { SESSION_COLUMNS } from './sql.js';
import type { Session } from './types.js';

/** One session by id, or null. `lock` takes its row lock for the caller's transaction. */
export function getSession(
  db: SqlHandle,
  id: string,
  options: { lock?: boolean } = {},
): Promise<Session | null> {
  return maybeRow<Session>(
    db,
    sql`SELECT ${SESSION_COLUMNS} FROM sessions s WHERE s.id = ${id} ${options.lock ? sql`FOR UPDATE` : sql``}`,
  );
}

/**
 * The session's last sequence number (null when the session is gone) and the database's
 * clock, in one row: what a stream polls, and the time it stamps a `session.deleted` with.
 */
export async function sessionHead(
  db: SqlHandle,
  id: string,
): Promise<{ lastSeq: number | null; now: string }> {
  const row = await maybeRow<{ lastSeq: number | null; now: string }>(
    db,
    sql`SELECT (SELECT last_seq FROM sessions WHERE id = ${id}) AS "lastSeq", ${sql.raw(ts('now()'))} AS now`,
  );
  return row!;
}
