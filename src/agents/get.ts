import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { AGENT_COLUMNS } from './sql.js';
import type { Agent } from './types.js';

/** One version of an agent (the newest without `version`), archived or not; or null. */
export async function getAgent(db: SqlHandle, id: string, version?: number): Promise<Agent | null> {
  const which = version === undefined ? sql`a.version` : sql`${version}::integer`;
  return maybeRow<Agent>(
    db,
    sql`SELECT ${AGENT_COLUMNS}
          FROM agents a JOIN agent_versions v ON v.agent_id = a.id AND v.version = ${which}
         WHERE a.id = ${id}`,
  );
}
