import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { ENVIRONMENT_COLUMNS } from './sql.js';
import type { Environment } from './types.js';

/**
 * Archives an environment, or null when there is none. Idempotent: archiving again keeps
 * the first `archived_at` and does not touch `updated_at` (SET reads the old row).
 */
export async function archiveEnvironment(db: SqlHandle, id: string): Promise<Environment | null> {
  return maybeRow<Environment>(
    db,
    sql`UPDATE environments
           SET archived_at = coalesce(archived_at, now()),
               updated_at = CASE WHEN archived_at IS NULL THEN now() ELSE updated_at END
         WHERE id = ${id}
     RETURNING ${ENVIRONMENT_COLUMNS}`,
  );
}
