import { type SQL, sql } from 'drizzle-orm';
import { rows, type SqlHandle } from '../db/handle.js';
import { instant } from '../db/instant.js';
import { AGENT_COLUMNS } from './sql.js';
import type { Agent, AgentCursor } from './types.js';

export interface ListAgentsOptions {
  /** Continue strictly past this position. */
  after?: AgentCursor | null;
  includeArchived?: boolean;
  /** Only agents created at or after / at or before these RFC 3339 instants. */
  createdGte?: string;
  createdLte?: string;
  /** Rows to fetch: pass limit + 1 to learn whether another page exists. */
  fetch: number;
}

/**
 * A page of agents at their newest versions, newest first by (created_at, id); archived ones
 * only with `includeArchived`. Times from outside reach SQL through `instant()`; callers check
 * them first, so an invalid one here is a programming error.
 */
export async function listAgents(db: SqlHandle, options: ListAgentsOptions): Promise<Agent[]> {
  const after = options.after
    ? sql`AND (a.created_at, a.id) < (${at(options.after.createdAt)}, ${options.after.id})`
    : sql``;
  const gte = options.createdGte === undefined ? sql`` : sql`AND a.created_at >= ${at(options.createdGte)}`;
  const lte = options.createdLte === undefined ? sql`` : sql`AND a.created_at <= ${at(options.createdLte)}`;
  const archived = options.includeArchived ? sql`` : sql`AND a.archived_at IS NULL`;
  return rows<Agent>(
    db,
    sql`SELECT ${AGENT_COLUMNS}
          FROM agents a JOIN agent_versions v ON v.agent_id = a.id AND v.version = a.version
         WHERE true ${archived} ${gte} ${lte} ${after}
         ORDER BY a.created_at DESC, a.id DESC
         LIMIT ${options.fetch}`,
  );
}

function at(value: string): SQL {
  const sqlInstant = instant(value);
  if (!sqlInstant) throw new TypeError(`not an RFC 3339 instant: ${JSON.stringify(value)}`);
  return sqlInstant;
}
