/**
 * Waiting for a race to be set up: a test holds a lock on one connection, starts the statement
 * that must meet it on another, and goes on only once that statement is parked on the lock.
 */
import { sql } from 'drizzle-orm';
import { rows, type SqlHandle } from '../../src/db/handle.js';

/**
 * Resolves once a backend of this database waits for a lock (the racing statement is parked),
 * or once `done()` is true (the statement finished without ever waiting); throws after ≈ 5 s.
 */
export async function untilSomeoneWaitsForALock(
  db: SqlHandle,
  done: () => boolean = () => false,
): Promise<void> {
  for (let i = 0; i < 500 && !done(); i++) {
    const [row] = await rows<{ n: number }>(
      db,
      sql`SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE wait_event_type = 'Lock' AND datname = current_database()`,
    );
    if (row && row.n > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  if (!done()) throw new Error('no backend ever waited for a lock');
}
