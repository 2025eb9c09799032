/**
 * The brain's model layer: what one model call takes and returns, and how it fails.
 *
 * Glossary:
 * - request / response: a Messages API call (`POST /v1/messages`, not streamed) as plain JSON.
 *   The types below are the subset of the Messages wire format the brain writes and reads; a
 *   field they leave out (a text block's `citations`, a tool_use block's `caller`) still
 *   travels verbatim, because responses are recorded and replayed as the JSON they were.
 * - call index: how many model calls the session's brain recorded before this one. A scripted
 *   model answers by it, so a restarted brain continues the script where the last one stopped.
 *
 * Why our own types instead of `@anthropic-ai/sdk`'s: the SDK is a devDependency, and the
 * Worker bundle must not grow by it. test/turns/sdk-types.test.ts keeps the two assignable.
 */

/** The media types the Messages API takes for base64 images. */
export type ImageMediaType = 'image/jpeg' | 'image/png' | 'image/gif' | 'image/webp';

export interface TextBlock {
  type: 'text';
  text: string;
}

export interface ImageBlock {
  type: 'image';
  source:
    | { type: 'base64'; media_type: ImageMediaType; data: string }
    | { type: 'url'; url: string }
    | { type: 'file'; file_id: string };
}

export interface DocumentBlock {
  type: 'document';
  source:
    | { type: 'base64'; media_type: 'application/pdf'; data: string }
    | { type: 'text'; media_type: 'text/plain'; data: string }
    | { type: 'url'; url: string }
    | { type: 'file'; file_id: string };
  title?: string | null;
  context?: string | null;
}

/** A search result a tool returned (session tool results may carry them). */
export interface SearchResultBlock {
  type: 'search_result';
  source: string;
  title: string;
  content: TextBlock[];
}

/** Extended thinking; the signature must go back unchanged or the API refuses the history. */
export interface ThinkingBlock {
  type: 'thinking';
  thinking: string;
  signature: string;
}

export interface RedactedThinkingBlock {
  type: 'redacted_thinking';
  data: string;
}

export interface ToolUseBlock {
  type: 'tool_use';
  /** The model's own id (`toolu_…`), which the matching tool_result names. */
  id: string;
  name: string;
  input: Record<string, unknown>;
}

export interface ToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content?: string | Array<TextBlock | ImageBlock | DocumentBlock | SearchResultBlock>;
  is_error?: boolean;
}

/** What a model answers with. */
export type ContentBlock = TextBlock | ThinkingBlock | RedactedThinkingBlock | ToolUseBlock;

/** What a user turn may hold. */
export type UserContentBlock = TextBlock | ImageBlock | DocumentBlock | ToolResultBlock;

export type MessageParam =
  | { role: 'user'; content: string | UserContentBlock[] }
  | { role: 'assistant'; content: string | ContentBlock[] };

/** A client tool as the Messages API takes it. */
export interface ToolDefinition {
  name: string;
  description?: string;
  input_schema: {
    type: 'object';
    properties?: Record<string, unknown> | null;
    required?: string[] | null;
    [key: string]: unknown;
  };
}

export interface ModelRequest {
  model: string;
  system?: string;
  messages: MessageParam[];
  tools: ToolDefinition[];
  max_tokens: number;
}

export interface ModelResponse {
  id?: string;
  model?: string;
  role?: 'assistant';
  content: ContentBlock[];
  stop_reason: string | null;
  usage: Record<string, unknown>;
}

export interface ModelCallContext {
  sessionId: string;
  /** 0-based: how many model calls the session's brain recorded before this one. */
  callIndex: number;
  /** Aborted when the brain must stop (its lease was lost): the call rejects with the reason. */
  signal?: AbortSignal;
}

export interface Model {
  create(request: ModelRequest, context: ModelCallContext): Promise<ModelResponse>;
}

/**
 * - overloaded: the API answered 529 (or `overloaded_error`) until the retries ran out;
 * - rate_limited: the API answered 429 (or `rate_limit_error`) until the retries ran out;
 * - request_failed: anything else — a 4xx, a 5xx past its retries, no answer, a malformed one;
 * - script_exhausted: a scripted model was asked for more responses than its script holds.
 */
export type ModelErrorKind = 'overloaded' | 'rate_limited' | 'request_failed' | 'script_exhausted';

/** A model call that failed for good: the model layer has already retried what it retries. */
export class ModelError extends Error {
  readonly kind: ModelErrorKind;
  /** The HTTP status of the last answer; null when there was none (network, timeout, script). */
  readonly status: number | null;

  constructor(
    kind: ModelErrorKind,
    message: string,
    options: { status?: number | null; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'ModelError';
    this.kind = kind;
    this.status = options.status ?? null;
  }
}

/** `retry_status` of a `session.error`: what the client should do next (SDK RetryStatus*). */
export type RetryStatus = { type: 'retrying' } | { type: 'exhausted' } | { type: 'terminal' };

/**
 * The `error` of a `session.error` event for a failed model call — exactly one of the SDK's
 * ModelOverloaded / ModelRateLimited / ModelRequestFailed / Unknown error objects.
 */
export type SessionErrorObject =
  | SessionErrorOf<'model_overloaded_error'>
  | SessionErrorOf<'model_rate_limited_error'>
  | SessionErrorOf<'model_request_failed_error'>
  | SessionErrorOf<'unknown_error'>;

interface SessionErrorOf<Type extends string> {
  type: Type;
  message: string;
  retry_status: RetryStatus;
}

/**
 * Maps a failure of a model call to the `session.error` object the brain appends. The retry
 * status defaults to `exhausted` ("this turn is dead; the session returns to idle; the client
 * may send a new prompt"): by the time a ModelError reaches the brain, its retries are spent.
 * A failure that is not a ModelError (a bug, a broken history) becomes `unknown_error` with a
 * fixed message, so internals never reach API clients; log the error itself.
 */
export function sessionErrorOf(
  err: unknown,
  retryStatus: RetryStatus['type'] = 'exhausted',
): SessionErrorObject {
  const retry_status = { type: retryStatus } as RetryStatus;
  if (!(err instanceof ModelError)) {
    return { type: 'unknown_error', message: 'The turn failed with an unexpected error.', retry_status };
  }
  switch (err.kind) {
    case 'overloaded':
      return { type: 'model_overloaded_error', message: err.message, retry_status };
    case 'rate_limited':
      return { type: 'model_rate_limited_error', message: err.message, retry_status };
    case 'request_failed':
      return { type: 'model_request_failed_error', message: err.message, retry_status };
    case 'script_exhausted':
      return { type: 'unknown_error', message: err.message, retry_status };
  }
}
