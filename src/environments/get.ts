import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { ENVIRONMENT_COLUMNS } from './sql.js';
import type { Environment } from './types.js';

/** One environment, archived or not, or null. */
export async function getEnvironment(db: SqlHandle, id: string): Promise<Environment | null> {
  return maybeRow<Environment>(db, sql`SELECT ${ENVIRONMENT_COLUMNS} FROM environments WHERE id = ${id}`);
}
