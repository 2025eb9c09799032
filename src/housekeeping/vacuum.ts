/**
 * Vacuuming, for a database that nothing else vacuums: the embedded PGlite is one process
 * with no background workers, so no autovacuum ever runs there. Without it every update and
 * delete leaves its old row version for good: the retention deletes rows but their space is
 * never reused, so the file grows with every item that ever went through the queue (≈ 1.2 KB
 * an item's life, measured), and transaction ids are never frozen. PostgreSQL (and Neon)
 * vacuum by themselves; hosts on them never ask for this.
 */
import { sql } from 'drizzle-orm';
import { DAY_MS } from '../config.js';
import type { SqlHandle } from '../db/handle.js';

/**
 * The tables every work item, poll and session writes to, in a statement each: each is a
 * short stall (PGlite runs one statement at a time), 25–40 ms for a `work_items` of 200,000
 * rows after 6,000 items went through their lives.
 */
const CHURNED = [
  'work_items',
  'worker_polls',
  'sessions',
  'session_events',
  'session_tool_calls',
  'queue_samples',
  'journal_purges',
] as const;

/** What a run vacuums: the churned tables, or the whole database with fresh statistics. */
export type VacuumScope = 'tables' | 'database';

/**
 * Plain VACUUM (never FULL: it marks the space of dead rows reusable without locking anyone
 * out for a rewrite). `database` also vacuums the catalogs, which table vacuums update, and
 * advances the database's frozen transaction id, and it refreshes every table's statistics
 * (ANALYZE): ≈ 0.6–0.9 s at 200,000 items, so a host runs it rarely. Returns the statements
 * run. Never inside a transaction: VACUUM refuses one.
 */
export async function vacuum(db: SqlHandle, scope: VacuumScope): Promise<number> {
  if (scope === 'database') {
    await db.execute(sql`VACUUM (ANALYZE)`);
    return 1;
  }
  for (const table of CHURNED) await db.execute(sql`VACUUM ${sql.identifier(table)}`);
  return CHURNED.length;
}

/**
 * Which scope each run of a host vacuums: the whole database at its first run and then once
 * per `databaseEveryMs`, the churned tables at every other. `nowMs` is the host's clock.
 */
export function vacuumSchedule(databaseEveryMs = DAY_MS): (nowMs: number) => VacuumScope {
  let next = Number.NEGATIVE_INFINITY;
  return (nowMs) => {
    if (nowMs < next) return 'tables';
    next = nowMs + databaseEveryMs;
    return 'database';
  };
}
