/**
 * The one seam between Leasehold and a database: anything that runs a Drizzle `sql` query.
 *
 * A Drizzle database over `pg` (Node) or PGlite (embedded), and `directDatabase` over the
 * Neon serverless Pool (Workers: drivers/direct.ts, without Drizzle's query builders in the
 * bundle), satisfy `Database`, and their transactions satisfy `SqlHandle` — so every queue
 * operation that takes a handle joins the caller's transaction when given one (enqueue
 * commits with the event that caused it).
 */
import type { SQL } from 'drizzle-orm';

export interface SqlHandle {
  execute(query: SQL): PromiseLike<unknown>;
}

export interface Database extends SqlHandle {
  transaction<T>(fn: (tx: SqlHandle) => Promise<T>): Promise<T>;
}

/** Runs a query and returns its rows; every driver answers `{ rows }` for a raw `execute`. */
export async function rows<T>(handle: SqlHandle, query: SQL): Promise<T[]> {
  const result = (await handle.execute(query)) as { rows: T[] };
  return result.rows;
}

/** Runs a query that returns at most one row. */
export async function maybeRow<T>(handle: SqlHandle, query: SQL): Promise<T | null> {
  const all = await rows<T>(handle, query);
  return all[0] ?? null;
}
