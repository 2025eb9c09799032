import { sql } from 'drizzle-orm';
import { type Database, maybeRow, type SqlHandle } from '../db/handle.js';
import { type AgentPatch, patchDefinition, sameDefinition } from './definition.js';
import { AgentArchivedError, AgentVersionConflictError } from './errors.js';
import { getAgent } from './get.js';
import { AGENT_COLUMNS } from './sql.js';
import type { Agent, AgentDefinition } from './types.js';

/**
 * Applies a patch as a new version, under the agent's row lock: concurrent updates queue up,
 * each built on the version before it, so none overwrites another (two patches to different
 * metadata keys both land, as versions n + 1 and n + 2). With `expectedVersion`, the update
 * applies only to that version (`AgentVersionConflictError` otherwise): the optimistic check a
 * read-modify-write client sends. A patch that changes nothing writes nothing and answers the
 * agent as it is: a version is a change, not a request. Null when there is no such agent;
 * `AgentArchivedError` for an archived one; `AgentDefinitionError` for a definition Leasehold
 * cannot run. Refusals write nothing.
 */
export async function updateAgent(
  db: Database,
  id: string,
  patch: AgentPatch,
  expectedVersion?: number,
): Promise<Agent | null> {
  return db.transaction(async (tx) => {
    if (!(await lockAgent(tx, id))) return null;
    const current = (await getAgent(tx, id))!;
    if (current.archivedAt !== null) throw new AgentArchivedError(id);
    if (expectedVersion !== undefined && expectedVersion !== current.version)
      throw new AgentVersionConflictError(id, expectedVersion, current.version);
    const definition = patchDefinition(current.definition, patch);
    if (sameDefinition(definition, current.definition)) return current;
    return appendVersion(tx, id, definition);
  });
}

/**
 * Locks the agent row against concurrent updates until the transaction ends; false when there
 * is none. The lock is taken alone and the agent read by the next statement: a statement that
 * waited for the lock still reads with the snapshot it started with, which cannot see the
 * version the lock holder just committed (joined in the same statement, it would lose the row).
 */
async function lockAgent(tx: SqlHandle, id: string): Promise<boolean> {
  return (await maybeRow(tx, sql`SELECT 1 AS ok FROM agents WHERE id = ${id} FOR UPDATE`)) !== null;
}

/** Version n + 1 and the agent row pointing at it, in one statement. */
async function appendVersion(tx: SqlHandle, id: string, definition: AgentDefinition): Promise<Agent> {
  const row = await maybeRow<Agent>(
    tx,
    sql`WITH a AS (
          UPDATE agents SET version = version + 1, updated_at = now() WHERE id = ${id}
          RETURNING id, version, archived_at, created_at, updated_at
        ), v AS (
          INSERT INTO agent_versions (agent_id, version, definition, created_at)
          SELECT a.id, a.version, ${JSON.stringify(definition)}::jsonb, a.updated_at FROM a
          RETURNING version, definition, created_at
        )
        SELECT ${AGENT_COLUMNS} FROM a, v`,
  );
  return row!;
}
