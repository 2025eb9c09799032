/**
 * The session's tool calls and their answers (`session_tool_calls`), one statement each. The
 * loop runs them inside the transaction that appends the events they describe, under the
 * session's row lock, so a read here and the write that follows it cannot be raced.
 */
import { sql } from 'drizzle-orm';
import { maybeRow, rows, type SqlHandle } from '../db/handle.js';

export interface ToolCall {
  eventId: string;
  modelToolUseId: string;
  custom: boolean;
  name: string;
  requestedSeq: number;
  answeredSeq: number | null;
  /** `{content, is_error}` of the answer, to tell a repeated answer from a different one. */
  answer: { content: unknown; is_error: boolean } | null;
  rearms: number;
}

const CALL_COLUMNS = sql.raw(`c.event_id AS "eventId", c.model_tool_use_id AS "modelToolUseId", c.custom,
  c.name, c.requested_seq AS "requestedSeq", c.answered_seq AS "answeredSeq", c.answer, c.rearms`);

export type NewToolCall = Pick<ToolCall, 'eventId' | 'modelToolUseId' | 'custom' | 'name' | 'requestedSeq'>;

/** Records the calls of one model response. */
export async function recordCalls(db: SqlHandle, sessionId: string, calls: NewToolCall[]): Promise<void> {
  if (calls.length === 0) return;
  await db.execute(
    sql`INSERT INTO session_tool_calls (session_id, event_id, model_tool_use_id, custom, name, requested_seq)
        SELECT ${sessionId}, c."eventId", c."modelToolUseId", c.custom, c.name, c."requestedSeq"
          FROM jsonb_to_recordset(${JSON.stringify(calls)}::jsonb)
            AS c("eventId" text, "modelToolUseId" text, custom boolean, name text, "requestedSeq" int)`,
  );
}

/** One call by its event id, or null. */
export function findCall(db: SqlHandle, sessionId: string, eventId: string): Promise<ToolCall | null> {
  return maybeRow<ToolCall>(
    db,
    sql`SELECT ${CALL_COLUMNS} FROM session_tool_calls c WHERE c.session_id = ${sessionId} AND c.event_id = ${eventId}`,
  );
}

/** The calls still waiting for an answer, oldest first. */
export function openCalls(db: SqlHandle, sessionId: string): Promise<ToolCall[]> {
  return rows<ToolCall>(
    db,
    sql`SELECT ${CALL_COLUMNS} FROM session_tool_calls c
         WHERE c.session_id = ${sessionId} AND c.answered_seq IS NULL
         ORDER BY c.requested_seq, c.event_id`,
  );
}

/** Every call of the session, in order: the brain maps answers back to the model's ids with them. */
export function allCalls(db: SqlHandle, sessionId: string): Promise<ToolCall[]> {
  return rows<ToolCall>(
    db,
    sql`SELECT ${CALL_COLUMNS} FROM session_tool_calls c WHERE c.session_id = ${sessionId}
         ORDER BY c.requested_seq, c.event_id`,
  );
}

/** Marks calls answered by the events at `seq`, unless already answered. */
export async function answerCalls(
  db: SqlHandle,
  sessionId: string,
  answers: Array<{ eventId: string; seq: number; answer: ToolCall['answer'] }>,
): Promise<void> {
  if (answers.length === 0) return;
  await db.execute(
    sql`UPDATE session_tool_calls c SET answered_seq = a.seq, answer = a.answer
          FROM jsonb_to_recordset(${JSON.stringify(answers)}::jsonb) AS a("eventId" text, seq int, answer jsonb)
         WHERE c.session_id = ${sessionId} AND c.event_id = a."eventId" AND c.answered_seq IS NULL`,
  );
}

/** Counts one more re-arm of every open call and returns them as they now stand. */
export function countRearm(db: SqlHandle, sessionId: string): Promise<ToolCall[]> {
  return rows<ToolCall>(
    db,
    sql`UPDATE session_tool_calls c SET rearms = c.rearms + 1
         WHERE c.session_id = ${sessionId} AND c.answered_seq IS NULL
     RETURNING ${CALL_COLUMNS}`,
  );
}
