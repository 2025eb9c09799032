/**
 * The conversation a model call sends, rebuilt from the session's event log.
 *
 * Glossary:
 * - event: one entry of the session's log, in sequence order — `body` is its wire fields less
 *   id / type / processed_at; `turn` is the brain's turn whose model response the event
 *   projects (null for user events).
 * - response: the model response the brain recorded for a turn. The assistant message of turn t
 *   is that response's content verbatim — thinking blocks and their signatures included, which
 *   the API requires back unchanged — not a re-assembly of the turn's events.
 * - tool-use ids: an `agent.tool_use` / `agent.custom_tool_use` event's id ↦ the model's own
 *   tool_use block id, which the tool_result must name.
 *
 * The Messages API requires roles to alternate (starting with user) and every tool_use to be
 * answered by a tool_result at the head of the next user message. The brain's loop guarantees
 * that pairing, so a history that breaks it is a bug: HistoryError names the event instead of
 * letting the API refuse the request with a less useful 400.
 */
import type {
  ContentBlock,
  MessageParam,
  ModelResponse,
  ToolResultBlock,
  UserContentBlock,
} from './model.js';

export interface HistoryEvent {
  id: string;
  type: string;
  body: Record<string, unknown>;
  turn: number | null;
}

export type HistoryViolation =
  /** A tool result names a call that is not among the preceding assistant message's tool_uses. */
  | 'unknown_tool_use'
  /** A second result for one call. */
  | 'duplicate_tool_result'
  /** A tool_use with no result before the next assistant message (or the end of the history). */
  | 'unpaired_tool_use'
  /** An agent event of a turn for which no response was recorded, or one with no turn. */
  | 'missing_response'
  /** An assistant message with no user contribution before it. */
  | 'roles_not_alternating'
  /** An event whose body lacks what its type needs. */
  | 'malformed_event';

export class HistoryError extends Error {
  constructor(
    readonly violation: HistoryViolation,
    /** The event at which the violation was found. */
    readonly eventId: string | null,
    message: string,
  ) {
    super(`history: ${message}`);
    this.name = 'HistoryError';
  }
}

/** Agent events that project a turn's model response; the first one of a turn brings it in. */
const AGENT_EVENTS = new Set(['agent.message', 'agent.tool_use', 'agent.custom_tool_use', 'agent.thinking']);
/** Result events, and the body field naming the agent event they answer. */
const RESULT_EVENTS: Readonly<Record<string, string>> = {
  'user.tool_result': 'tool_use_id',
  'user.custom_tool_result': 'custom_tool_use_id',
};
/** Blocks a user.message contributes; anything else (a `redacted` placeholder) has no content to send. */
const USER_BLOCKS = new Set(['text', 'image', 'document']);
/** Blocks a tool result's content may hold. */
const RESULT_BLOCKS = new Set(['text', 'image', 'document', 'search_result']);

/** The assistant message last added, and which of its tool_uses have a result yet. */
interface OpenCalls {
  eventId: string;
  pending: Set<string>;
}

export function buildMessages(
  events: readonly HistoryEvent[],
  responses: ReadonlyMap<number, ModelResponse>,
  toolUseIds: ReadonlyMap<string, string>,
): MessageParam[] {
  const messages: MessageParam[] = [];
  const turnsSeen = new Set<number>();
  let results: ToolResultBlock[] = [];
  let userContent: UserContentBlock[] = [];
  let open: OpenCalls | null = null;
  const answered = new Set<string>();

  // Tool results lead: the API matches them to the tool_uses of the message just before.
  const flushUser = () => {
    if (results.length + userContent.length === 0) return;
    messages.push({ role: 'user', content: [...results, ...userContent] });
    results = [];
    userContent = [];
  };

  for (const event of events) {
    if (event.type === 'user.message') {
      userContent.push(...blocksOf(event, 'content', USER_BLOCKS, true));
    } else if (Object.hasOwn(RESULT_EVENTS, event.type)) {
      const field = RESULT_EVENTS[event.type]!;
      const callEventId = event.body[field];
      if (typeof callEventId !== 'string') {
        throw new HistoryError(
          'malformed_event',
          event.id,
          `${event.type} ${event.id} has no string ${field}`,
        );
      }
      const blockId = toolUseIds.get(callEventId);
      if (blockId === undefined || open === null || !(open.pending.has(blockId) || answered.has(blockId))) {
        throw new HistoryError(
          'unknown_tool_use',
          event.id,
          `${event.type} ${event.id} answers ${callEventId}, which is not a tool call of the assistant message before it`,
        );
      }
      if (answered.has(blockId)) {
        throw new HistoryError(
          'duplicate_tool_result',
          event.id,
          `${event.type} ${event.id} answers ${callEventId} a second time`,
        );
      }
      open.pending.delete(blockId);
      answered.add(blockId);
      results.push(resultBlock(event, blockId));
    } else if (AGENT_EVENTS.has(event.type)) {
      const turn = event.turn;
      if (turn === null) {
        throw new HistoryError('missing_response', event.id, `${event.type} ${event.id} names no turn`);
      }
      if (turnsSeen.has(turn)) continue;
      const response = responses.get(turn);
      if (response === undefined) {
        throw new HistoryError(
          'missing_response',
          event.id,
          `${event.type} ${event.id} belongs to turn ${turn}, which has no recorded response`,
        );
      }
      if (open !== null) assertAnswered(open, event, toolUseIds);
      flushUser();
      if (messages.at(-1)?.role !== 'user') {
        throw new HistoryError(
          'roles_not_alternating',
          event.id,
          `${event.type} ${event.id} starts an assistant message with no user message before it`,
        );
      }
      turnsSeen.add(turn);
      messages.push({ role: 'assistant', content: [...response.content] });
      open = { eventId: event.id, pending: new Set(toolUseBlockIds(response.content)) };
    }
    // Every other event type (status, spans, errors, agent.tool_result, …) says nothing to the model.
  }
  if (open !== null) assertAnswered(open, null, toolUseIds);
  flushUser();
  return messages;
}

function toolUseBlockIds(content: readonly ContentBlock[]): string[] {
  return content.flatMap((block) => (block.type === 'tool_use' ? [block.id] : []));
}

function assertAnswered(
  open: OpenCalls,
  next: HistoryEvent | null,
  toolUseIds: ReadonlyMap<string, string>,
): void {
  const [blockId] = open.pending;
  if (blockId === undefined) return;
  // Name the agent event that projected the call, when the map knows it.
  const callEvent = [...toolUseIds].find(([, id]) => id === blockId)?.[0];
  const call = callEvent ? `tool call ${callEvent} (${blockId})` : `tool_use ${blockId}`;
  const where = next ? `before ${next.type} ${next.id}` : 'at the end of the history';
  throw new HistoryError(
    'unpaired_tool_use',
    callEvent ?? open.eventId,
    `${call} of the assistant message opened by ${open.eventId} has no result ${where}`,
  );
}

function resultBlock(event: HistoryEvent, blockId: string): ToolResultBlock {
  const block: ToolResultBlock = {
    type: 'tool_result',
    tool_use_id: blockId,
    is_error: event.body.is_error === true,
  };
  if (event.body.content !== undefined && event.body.content !== null) {
    block.content = blocksOf(event, 'content', RESULT_BLOCKS, false) as ToolResultBlock['content'];
  }
  return block;
}

/** The event's content blocks of the allowed types, verbatim; a body without the array is malformed. */
function blocksOf(
  event: HistoryEvent,
  field: string,
  allowed: ReadonlySet<string>,
  required: boolean,
): UserContentBlock[] {
  const value = event.body[field];
  if (!Array.isArray(value)) {
    if (!required && value === undefined) return [];
    throw new HistoryError('malformed_event', event.id, `${event.type} ${event.id} has no ${field} array`);
  }
  return value.filter(
    (block): block is UserContentBlock =>
      typeof block === 'object' &&
      block !== null &&
      allowed.has((block as { type?: unknown }).type as string),
  );
}
