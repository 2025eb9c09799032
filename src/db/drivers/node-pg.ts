/**
 * The `pg` driver (Node): a connection pool behind Drizzle. The pool's size is the caller's
 * policy; Leasehold never holds a pooled connection while it waits (long polls listen on
 * their own connection).
 */
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';

export interface PgConnection {
  db: NodePgDatabase;
  pool: pg.Pool;
  close(): Promise<void>;
}

export interface PgOptions {
  /** Pool size (default 10). */
  max?: number;
  /** Called for errors of idle pooled connections (e.g. the server restarted). */
  onError?: (err: Error) => void;
}

export function connectPg(url: string, options: PgOptions = {}): PgConnection {
  const pool = new pg.Pool({ connectionString: url, max: options.max ?? 10 });
  // An idle client's socket error is emitted on the pool; unhandled, it would crash the process.
  pool.on('error', options.onError ?? (() => {}));
  return { db: drizzle({ client: pool }), pool, close: () => pool.end() };
}

/** Applies the migrations in `migrationsFolder` (the project's `drizzle/`). */
export async function migratePg(db: NodePgDatabase, migrationsFolder: string): Promise<void> {
  await migrate(db, { migrationsFolder });
}
