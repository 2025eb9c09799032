import type { SqlHandle } from '../db/handle.js';
import { isMintedId } from '../ids.js';
import { AgentArchivedError } from './errors.js';
import { getAgent } from './get.js';
import { MAX_VERSION, type SessionAgent } from './types.js';

/**
 * The agent a new session will run: the version `ref` names (the newest without one), as the
 * wire's session agent shows it, so the session can keep it whole and is unaffected by later
 * updates. Null when there is no such agent or version; `AgentArchivedError` when the agent is
 * archived, whichever version is asked for: archiving retires an agent from new sessions.
 */
export async function resolveAgent(
  db: SqlHandle,
  ref: { id: string; version?: number },
): Promise<SessionAgent | null> {
  // An id Leasehold never minted names nothing, and never reaches SQL.
  if (!isMintedId(ref.id, 'agent')) return null;
  if (
    ref.version !== undefined &&
    !(Number.isInteger(ref.version) && ref.version >= 1 && ref.version <= MAX_VERSION)
  )
    return null;
  const agent = await getAgent(db, ref.id, ref.version);
  if (!agent) return null;
  if (agent.archivedAt !== null) throw new AgentArchivedError(agent.id);
  const { metadata: _, ...definition } = agent.definition;
  return { id: agent.id, type: 'agent', version: agent.version, ...definition };
}
