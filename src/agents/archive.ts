import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { AGENT_COLUMNS } from './sql.js';
import type { Agent } from './types.js';

/**
 * Archives an agent and answers it at its newest version, or null when there is none.
 * Idempotent: archiving again keeps the first `archived_at`. Archiving writes no version and
 * leaves `updated_at` (when the newest version was written) as it was.
 */
export async function archiveAgent(db: SqlHandle, id: string): Promise<Agent | null> {
  return maybeRow<Agent>(
    db,
    sql`WITH a AS (
          UPDATE agents SET archived_at = coalesce(archived_at, now()) WHERE id = ${id}
          RETURNING id, version, archived_at, created_at
        )
        SELECT ${AGENT_COLUMNS} FROM a JOIN agent_versions v ON v.agent_id = a.id AND v.version = a.version`,
  );
}
