import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { SESSION_COLUMNS } from './sql.js';
import type { Session } from './types.js';

export interface CreateSessionInput {
  id: string;
  environmentId: string;
  /** The resolved agent version, stored whole: later agent updates do not reach the session. */
  agent: Record<string, unknown> & { id: string; version: number };
  title: string | null;
  metadata: Record<string, string>;
  resources: unknown[];
}

/**
 * Inserts a session created through the API, idle with an empty log. The caller checks the
 * environment first; one deleted in between fails the foreign key (`pgCode` 23503).
 */
export async function createSession(db: SqlHandle, input: CreateSessionInput): Promise<Session> {
  const row = await maybeRow<Session>(
    db,
    sql`WITH s AS (
      INSERT INTO sessions (id, environment_id, agent, agent_id, agent_version, title, metadata, resources)
      VALUES (${input.id}, ${input.environmentId}, ${JSON.stringify(input.agent)}::jsonb, ${input.agent.id},
              ${input.agent.version}, ${input.title}, ${JSON.stringify(input.metadata)}::jsonb,
              ${JSON.stringify(input.resources)}::jsonb)
      RETURNING *
    )
    SELECT ${SESSION_COLUMNS} FROM s`,
  );
  return row!;
}
