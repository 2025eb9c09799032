import { sql } from 'drizzle-orm';
import { rows, type SqlHandle } from '../db/handle.js';
import { AGENT_COLUMNS } from './sql.js';
import type { Agent } from './types.js';

/**
 * A page of an agent's versions, newest first; with `before`, only the versions below it.
 * Fetches up to `fetch` (pass limit + 1 to learn whether another page exists). Null when the
 * agent does not exist, which an empty page past its last version is told apart from.
 */
export async function listAgentVersions(
  db: SqlHandle,
  id: string,
  options: { before?: number | null; fetch: number },
): Promise<Agent[] | null> {
  const before = options.before ? sql`AND version < ${options.before}::integer` : sql``;
  // The agent row always comes back (its versions, if any, joined to it), so "no such agent"
  // and "no versions on this page" are one statement apart.
  const found = await rows<Agent & { version: number | null }>(
    db,
    sql`SELECT ${AGENT_COLUMNS}
          FROM agents a
          LEFT JOIN LATERAL (
            SELECT version, definition, created_at FROM agent_versions
             WHERE agent_id = a.id ${before}
             ORDER BY version DESC LIMIT ${options.fetch}
          ) v ON true
         WHERE a.id = ${id}
         ORDER BY v.version DESC`,
  );
  if (found.length === 0) return null;
  return found.filter((row): row is Agent => row.version !== null);
}
