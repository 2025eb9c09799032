/**
 * Sessions: their rows, their event logs and their tool calls — the data the session loop
 * (src/loop/) drives. A session is bound to one environment for life: on first use by the
 * platform lane (an opaque id), or when `POST /v1/sessions` creates it.
 */

export { type AppendOptions, appendEvents } from './append-events.js';
export { archiveSession } from './archive.js';
export { type BindOutcome, bindSession } from './bind-session.js';
export { type CreateSessionInput, createSession } from './create.js';
export { deleteSession } from './delete.js';
export { getSession, sessionHead } from './get.js';
export { listSessions, type SessionListOptions } from './list.js';
export { type EventListOptions, listEvents } from './list-events.js';
export {
  JOURNAL_PURGE_GRACE_MS,
  JOURNAL_PURGE_HOLD_MS,
  type JournalProvider,
  purgeJournals,
  retireArchivedSessions,
  retireEmptyPlatformSessions,
} from './retention.js';
export { SESSION_EVENTS_CHANNEL } from './sql.js';
export {
  allCalls,
  answerCalls,
  countRearm,
  findCall,
  type NewToolCall,
  openCalls,
  recordCalls,
  type ToolCall,
} from './tool-calls.js';
export {
  type NewEvent,
  type Session,
  type SessionEvent,
  type SessionStatus,
  toWireEvent,
} from './types.js';
export { type SessionPatch, type UpdateOutcome, updateSession } from './update.js';
