import { sql } from 'drizzle-orm';
import { ts } from '../db/time.js';

/**
 * The `Agent` projection of one version: `agents a` joined to one of its `agent_versions v`,
 * aliased to the TypeScript field names. `updatedAt` is when that version was written.
 */
export const AGENT_COLUMNS = sql.raw(`a.id, v.version, v.definition,
  ${ts('a.archived_at')} AS "archivedAt", ${ts('a.created_at')} AS "createdAt", ${ts('v.created_at')} AS "updatedAt"`);
