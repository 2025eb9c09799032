/**
 * Request bodies of the session endpoints, as the SDK's `SessionCreateParams`,
 * `SessionUpdateParams` and `EventSendParams`. Unknown fields are refused at every level;
 * fields the SDK defines but Leasehold cannot honour are parsed so the route can refuse them
 * by name (see sessions-create.ts).
 */
import { z } from 'zod';

/** Events in one POST, and initial events at create (the SDK's own cap for the latter). */
export const MAX_EVENTS = 50;
/** Content blocks in one message or result. */
export const MAX_BLOCKS = 100;
export const MAX_TITLE = 512;
const MAX_TEXT = 1_000_000;
const ID = z.string().min(1).max(128);

const optional = <T extends z.ZodType>(schema: T) => schema.nullable().optional();

const text = z.strictObject({ type: z.literal('text'), text: z.string().max(MAX_TEXT) });
const source = z.record(z.string(), z.unknown());
const image = z.strictObject({ type: z.literal('image'), source });
const document = z.strictObject({
  type: z.literal('document'),
  source,
  title: optional(z.string().max(MAX_TITLE)),
  context: optional(z.string().max(MAX_TEXT)),
});
const searchResult = z.strictObject({
  type: z.literal('search_result'),
  source: z.string().max(MAX_TEXT),
  title: z.string().max(MAX_TEXT),
  content: z.array(text).max(MAX_BLOCKS),
  citations: optional(z.strictObject({ enabled: z.boolean() })),
});
const messageContent = z
  .array(z.discriminatedUnion('type', [text, image, document]))
  .min(1)
  .max(MAX_BLOCKS);
const resultContent = z
  .array(z.discriminatedUnion('type', [text, image, document, searchResult]))
  .max(MAX_BLOCKS);

export const userMessage = z.strictObject({ type: z.literal('user.message'), content: messageContent });
const userInterrupt = z.strictObject({ type: z.literal('user.interrupt'), session_thread_id: optional(ID) });
const toolConfirmation = z.strictObject({
  type: z.literal('user.tool_confirmation'),
  tool_use_id: ID,
  result: z.enum(['allow', 'deny']),
  deny_message: optional(z.string().max(MAX_TEXT)),
});
const toolResult = z.strictObject({
  type: z.literal('user.tool_result'),
  tool_use_id: ID,
  content: optional(resultContent),
  is_error: optional(z.boolean()),
});
const customToolResult = z.strictObject({
  type: z.literal('user.custom_tool_result'),
  custom_tool_use_id: ID,
  content: optional(resultContent),
  is_error: optional(z.boolean()),
});
/** Parsed so it can be refused by name: Leasehold grades no outcomes. */
const defineOutcome = z.looseObject({ type: z.literal('user.define_outcome') });

export const eventParams = z.discriminatedUnion('type', [
  userMessage,
  userInterrupt,
  toolConfirmation,
  toolResult,
  customToolResult,
  defineOutcome,
]);
export type EventParams = z.infer<typeof eventParams>;

export const sendEventsBody = z.strictObject({ events: z.array(eventParams).min(1).max(MAX_EVENTS) });

const agentRef = z.union([
  ID.describe('an agent id: the newest version'),
  z.strictObject({ type: z.literal('agent'), id: ID, version: z.int().min(1).optional() }),
]);

export const createSessionBody = z.strictObject({
  agent: agentRef,
  environment_id: ID,
  title: optional(z.string().max(MAX_TITLE)),
  metadata: z.record(z.string(), z.string()).optional(),
  resources: z.array(z.record(z.string(), z.unknown())).max(MAX_BLOCKS).optional(),
  vault_ids: z.array(z.string().max(128)).max(MAX_BLOCKS).optional(),
  budget: optional(z.record(z.string(), z.unknown())),
  initial_events: z
    .array(z.discriminatedUnion('type', [userMessage, defineOutcome]))
    .max(MAX_EVENTS)
    .optional(),
});

export const updateSessionBody = z.strictObject({
  title: optional(z.string().max(MAX_TITLE)),
  metadata: optional(z.record(z.string(), z.string().nullable())),
  agent: optional(z.record(z.string(), z.unknown())),
  budget: optional(z.record(z.string(), z.unknown())),
  vault_ids: z.array(z.string().max(128)).max(MAX_BLOCKS).optional(),
});

/**
 * An event as the log stores it: the client's fields with optional ones made explicit
 * (`content: []`, `is_error: false`), nulls dropped, so a repeated answer compares equal
 * however the client spelled its defaults.
 */
export function normalizeEvent(event: EventParams): { type: string } & Record<string, unknown> {
  switch (event.type) {
    case 'user.tool_result':
    case 'user.custom_tool_result':
      return { ...event, content: event.content ?? [], is_error: event.is_error ?? false };
    case 'user.interrupt':
      return { type: event.type };
    case 'user.tool_confirmation': {
      const { deny_message, ...rest } = event;
      return deny_message == null ? rest : { ...rest, deny_message };
    }
    default:
      return event;
  }
}
