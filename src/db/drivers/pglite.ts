/**
 * The embedded driver: PGlite, a single-connection Postgres in WebAssembly. PGlite runs one
 * transaction at a time and queues every other query behind it, so a transaction that
 * awaits anything that itself needs the database waits forever. Leasehold's operations are
 * single statements and never do that; callers holding a transaction must not either.
 */
import { PGlite } from '@electric-sql/pglite';
import { drizzle, type PgliteDatabase } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';

export interface PgliteConnection {
  db: PgliteDatabase;
  client: PGlite;
  close(): Promise<void>;
}

/** Opens (creating if needed) the database in `dataDir`, or in memory when absent. */
export async function openPglite(
  dataDir?: string,
  options: { loadDataDir?: Blob } = {},
): Promise<PgliteConnection> {
  const client = await PGlite.create({ dataDir, loadDataDir: options.loadDataDir });
  return { db: drizzle({ client }), client, close: () => client.close() };
}

export async function migratePglite(db: PgliteDatabase, migrationsFolder: string): Promise<void> {
  await migrate(db, { migrationsFolder });
}
