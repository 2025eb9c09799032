/**
 * Request bodies of the session endpoints, as the SDK's `SessionCreateParams`,
 * `SessionUpdateParams` and `EventSendParams`. Unknown fields are refused at every level;
 * fields the SDK defines but Leasehold cannot honour are parsed so the route can refuse them
 * by name (see sessions-create.ts).
 */
import * as z from 'zod/mini';

/** Events in one POST, and initial events at create (the SDK's own cap for the latter). */
const MAX_EVENTS = 50;
/** Content blocks in one message or result. */
const MAX_BLOCKS = 100;
const MAX_TITLE = 512;
const MAX_TEXT = 1_000_000;
const ID = z.string().check(z.minLength(1), z.maxLength(128));

const optional = <T extends z.ZodMiniType>(schema: T) => z.optional(z.nullable(schema));
/** A string of at most `max` characters. */
const upTo = (max: number) => z.string().check(z.maxLength(max));

const text = z.strictObject({ type: z.literal('text'), text: upTo(MAX_TEXT) });
const source = z.record(z.string(), z.unknown());
const image = z.strictObject({ type: z.literal('image'), source });
const document = z.strictObject({
  type: z.literal('document'),
  source,
  title: optional(upTo(MAX_TITLE)),
  context: optional(upTo(MAX_TEXT)),
});
const searchResult = z.strictObject({
  type: z.literal('search_result'),
  source: upTo(MAX_TEXT),
  title: upTo(MAX_TEXT),
  content: z.array(text).check(z.maxLength(MAX_BLOCKS)),
  citations: optional(z.strictObject({ enabled: z.boolean() })),
});
const messageContent = z
  .array(z.discriminatedUnion('type', [text, image, document]))
  .check(z.minLength(1), z.maxLength(MAX_BLOCKS));
const resultContent = z
  .array(z.discriminatedUnion('type', [text, image, document, searchResult]))
  .check(z.maxLength(MAX_BLOCKS));

const userMessage = z.strictObject({ type: z.literal('user.message'), content: messageContent });
const userInterrupt = z.strictObject({ type: z.literal('user.interrupt'), session_thread_id: optional(ID) });
const toolConfirmation = z.strictObject({
  type: z.literal('user.tool_confirmation'),
  tool_use_id: ID,
  result: z.enum(['allow', 'deny']),
  deny_message: optional(upTo(MAX_TEXT)),
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

const eventParams = z.discriminatedUnion('type', [
  userMessage,
  userInterrupt,
  toolConfirmation,
  toolResult,
  customToolResult,
  defineOutcome,
]);
export type EventParams = z.infer<typeof eventParams>;

export const sendEventsBody = z.strictObject({
  events: z.array(eventParams).check(z.minLength(1), z.maxLength(MAX_EVENTS)),
});

const agentRef = z.union([
  ID.check(z.describe('an agent id: the newest version')),
  z.strictObject({ type: z.literal('agent'), id: ID, version: z.optional(z.int().check(z.gte(1))) }),
]);

export const createSessionBody = z.strictObject({
  agent: agentRef,
  environment_id: ID,
  title: optional(upTo(MAX_TITLE)),
  metadata: z.optional(z.record(z.string(), z.string())),
  resources: z.optional(z.array(z.record(z.string(), z.unknown())).check(z.maxLength(MAX_BLOCKS))),
  vault_ids: z.optional(z.array(upTo(128)).check(z.maxLength(MAX_BLOCKS))),
  budget: optional(z.record(z.string(), z.unknown())),
  initial_events: z.optional(
    z.array(z.discriminatedUnion('type', [userMessage, defineOutcome])).check(z.maxLength(MAX_EVENTS)),
  ),
});

export const updateSessionBody = z.strictObject({
  title: optional(upTo(MAX_TITLE)),
  metadata: optional(z.record(z.string(), z.nullable(z.string()))),
  agent: optional(z.record(z.string(), z.unknown())),
  budget: optional(z.record(z.string(), z.unknown())),
  vault_ids: z.optional(z.array(upTo(128)).check(z.maxLength(MAX_BLOCKS))),
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
