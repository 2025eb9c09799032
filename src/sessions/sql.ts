/** The projections the sessions module's statements share. */
import { sql } from 'drizzle-orm';
import { ts } from '../db/time.js';

/** The `Session` projection of `sessions s`, the running span and the age computed by the database. */
export const SESSION_COLUMNS = sql.raw(`s.id, s.environment_id AS "environmentId", s.agent,
  s.agent_id AS "agentId", s.agent_version AS "agentVersion", s.status, s.title, s.metadata,
  s.resources, s.usage,
  (s.active_seconds + CASE WHEN s.running_since IS NULL THEN 0
                           ELSE extract(epoch FROM greatest(now() - s.running_since, interval '0'))
                      END)::double precision AS "activeSeconds",
  extract(epoch FROM (CASE WHEN s.status = 'terminated' THEN s.updated_at ELSE now() END)
                     - s.created_at)::double precision AS "durationSeconds",
  s.last_seq AS "lastSeq", ${ts('s.created_at')} AS "createdAt", ${ts('s.updated_at')} AS "updatedAt",
  ${ts('s.archived_at')} AS "archivedAt"`);

/** The `SessionEvent` projection of `session_events e`. */
export const EVENT_COLUMNS = sql.raw(`e.session_id AS "sessionId", e.seq, e.id, e.type, e.body,
  ${ts('e.processed_at')} AS "processedAt", e.turn`);

/**
 * The channel every append (and a deletion) notifies, payload the session id: on Node the
 * event streams wake on it. Delivered when the writing transaction commits.
 */
export const SESSION_EVENTS_CHANNEL = 'leasehold_session_events';
