/**
 * Answers the loop writes itself, so a model's history stays paired (every tool_use has its
 * tool_result) and nothing runs a call again: for a call interrupted, denied, superseded by a
 * new user message, or given up on after too many deliveries.
 */
import type { NewEvent, ToolCall } from '../sessions/index.js';

export const INTERRUPTED = 'The call was not run to completion: the user interrupted the session.';
export const SUPERSEDED = 'The call was not answered before the user sent a new message.';
export const DENIED = 'The user denied this tool call.';
export const NOT_ENABLED = 'This tool is not enabled for the agent.';

/** The result event answering `call` with an error saying `text`. */
export function errorResult(call: Pick<ToolCall, 'eventId' | 'custom'>, text: string): NewEvent {
  const content = [{ type: 'text', text }];
  return call.custom
    ? { type: 'user.custom_tool_result', body: { custom_tool_use_id: call.eventId, content, is_error: true } }
    : { type: 'user.tool_result', body: { tool_use_id: call.eventId, content, is_error: true } };
}

/** The `{content, is_error}` an answer is compared by. */
export function answerOf(event: NewEvent): { content: unknown; is_error: boolean } {
  return { content: event.body.content ?? [], is_error: event.body.is_error === true };
}
