import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { newId } from '../ids.js';
import { type AgentParams, resolveDefinition } from './definition.js';
import { AGENT_COLUMNS } from './sql.js';
import type { Agent } from './types.js';

/**
 * Creates an agent at version 1: the agent row and its first version in one statement, so
 * neither can exist without the other. Throws `AgentDefinitionError` for a definition
 * Leasehold cannot run, before anything is written.
 */
export async function createAgent(db: SqlHandle, params: AgentParams): Promise<Agent> {
  const definition = resolveDefinition(params);
  const row = await maybeRow<Agent>(
    db,
    sql`WITH a AS (
          INSERT INTO agents (id, version) VALUES (${newId('agent')}, 1)
          RETURNING id, archived_at, created_at
        ), v AS (
          INSERT INTO agent_versions (agent_id, version, definition, created_at)
          SELECT a.id, 1, ${JSON.stringify(definition)}::jsonb, a.created_at FROM a
          RETURNING version, definition, created_at
        )
        SELECT ${AGENT_COLUMNS} FROM a, v`,
  );
  return row!;
}
