/**
 * The real model: one non-streaming `POST {baseUrl}/v1/messages` per call, over `fetch`, so it
 * runs the same on Node and on Workers without bundling the SDK.
 *
 * Retries follow the official SDK's client: 408, 409, 429 and 5xx (529 = overloaded), failed
 * connections and timed-out attempts are retried with exponential backoff and jitter, or after
 * the `retry-after-ms` / `retry-after` the server asks for; `x-should-retry: true|false`
 * overrides the status. Unlike the SDK, a long `retry-after` is capped rather than ignored:
 * the brain holds a lease while it waits, so every wait is bounded. What is left after the
 * retries becomes a ModelError (overloaded, rate_limited or request_failed with the status).
 *
 * The key and URL come from LEASEHOLD_MODEL_API_KEY / LEASEHOLD_MODEL_BASE_URL (src/config.ts),
 * never ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL: a bring-your-own-compute user points those at
 * Leasehold itself, and the brain would call itself.
 */
import {
  type ContentBlock,
  type Model,
  type ModelCallContext,
  ModelError,
  type ModelRequest,
  type ModelResponse,
} from './model.js';

const DEFAULT_BASE_URL = 'https://api.anthropic.com';
/** The Messages API version every official SDK sends. */
const ANTHROPIC_VERSION = '2023-06-01';
/** The SDK's default: a non-streaming call may take minutes for a large max_tokens. */
const DEFAULT_TIMEOUT_MS = 600_000;
/** The SDK's default: three attempts in all. */
const DEFAULT_MAX_RETRIES = 2;
/** Backoff before retry n (0-based) is min(INITIAL · 2ⁿ, MAX) less up to 25 % jitter (the SDK's). */
const INITIAL_RETRY_DELAY_MS = 500;
const MAX_RETRY_DELAY_MS = 8_000;
/** The longest `retry-after` honoured as given; longer asks wait this long (a lease is held). */
export const MAX_RETRY_AFTER_MS = 60_000;
/** Upper bound on maxRetries: each retry may wait up to a minute under a held lease. */
const MAX_RETRIES_LIMIT = 10;

export interface AnthropicModelConfig {
  apiKey: string;
  /** Default https://api.anthropic.com; a trailing slash is ignored. */
  baseUrl?: string | null;
  /** Default: the global fetch. */
  fetch?: typeof fetch;
  /** Per attempt; default 600,000 ms. */
  timeoutMs?: number;
  /** Retries after the first attempt; default 2, at most 10. */
  maxRetries?: number;
}

/** One attempt's outcome: a response to return, or a failure to retry or to throw. */
type Attempt =
  | { ok: true; response: ModelResponse }
  | { ok: false; error: ModelError; retry: boolean; waitMs: number | null };

export class AnthropicModel implements Model {
  readonly #url: string;
  readonly #apiKey: string;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;
  readonly #maxRetries: number;

  constructor(config: AnthropicModelConfig) {
    if (!config.apiKey) throw new TypeError('AnthropicModel: apiKey is required');
    const maxRetries = config.maxRetries ?? DEFAULT_MAX_RETRIES;
    if (!Number.isInteger(maxRetries) || maxRetries < 0 || maxRetries > MAX_RETRIES_LIMIT) {
      throw new TypeError(`AnthropicModel: maxRetries must be an integer from 0 to ${MAX_RETRIES_LIMIT}`);
    }
    const timeoutMs = config.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!(timeoutMs > 0)) throw new TypeError('AnthropicModel: timeoutMs must be positive');
    this.#url = `${(config.baseUrl || DEFAULT_BASE_URL).replace(/\/+$/, '')}/v1/messages`;
    this.#apiKey = config.apiKey;
    // Called through a closure: Workers' fetch throws "Illegal invocation" when detached from globalThis.
    this.#fetch = config.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#timeoutMs = timeoutMs;
    this.#maxRetries = maxRetries;
  }

  async create(request: ModelRequest, context: ModelCallContext): Promise<ModelResponse> {
    const body = JSON.stringify(requestBody(request));
    for (let retry = 0; ; retry++) {
      context.signal?.throwIfAborted();
      const attempt = await this.#attempt(body, context.signal);
      if (attempt.ok) return attempt.response;
      if (!attempt.retry || retry >= this.#maxRetries) throw attempt.error;
      await sleep(attempt.waitMs ?? backoffMs(retry), context.signal);
    }
  }

  async #attempt(body: string, signal: AbortSignal | undefined): Promise<Attempt> {
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => controller.abort(new AttemptTimeout()), this.#timeoutMs);
    try {
      const res = await this.#fetch(this.#url, {
        method: 'POST',
        headers: {
          'x-api-key': this.#apiKey,
          'anthropic-version': ANTHROPIC_VERSION,
          'content-type': 'application/json',
          accept: 'application/json',
        },
        body,
        signal: controller.signal,
      });
      const text = await res.text();
      if (res.ok) return parseSuccess(res.status, text);
      return failure(res, text);
    } catch (err) {
      // The caller's abort is not a model failure: the brain is told to stop, so stop.
      if (signal?.aborted) throw signal.reason;
      const timedOut = controller.signal.reason instanceof AttemptTimeout;
      const message = timedOut
        ? `The model request timed out after ${this.#timeoutMs} ms.`
        : `The model request failed: ${err instanceof Error ? err.message : String(err)}`;
      return {
        ok: false,
        error: new ModelError('request_failed', message, { cause: err }),
        retry: true,
        waitMs: null,
      };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }
}

/** The abort reason of an attempt that ran out of time, told apart from the caller's abort. */
class AttemptTimeout extends Error {}

function requestBody(request: ModelRequest): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: request.model,
    max_tokens: request.max_tokens,
    messages: request.messages,
  };
  if (request.system !== undefined && request.system !== '') body.system = request.system;
  // An empty list is left out: a conversation without tools is the same request either way.
  if (request.tools.length > 0) body.tools = request.tools;
  return body;
}

function parseSuccess(status: number, text: string): Attempt {
  const message = parseJsonObject(text);
  const content = message?.content;
  if (
    !message ||
    !Array.isArray(content) ||
    !content.every((b) => isObject(b) && typeof b.type === 'string')
  ) {
    const error = new ModelError(
      'request_failed',
      'The model answered with something other than a message.',
      {
        status,
      },
    );
    return { ok: false, error, retry: false, waitMs: null };
  }
  const response: ModelResponse = {
    content: content as ContentBlock[],
    stop_reason: typeof message.stop_reason === 'string' ? message.stop_reason : null,
    usage: isObject(message.usage) ? message.usage : {},
  };
  if (typeof message.id === 'string') response.id = message.id;
  if (typeof message.model === 'string') response.model = message.model;
  if (message.role === 'assistant') response.role = 'assistant';
  return { ok: true, response };
}

function parseJsonObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return isObject(value) ? value : null;
  } catch {
    return null;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function failure(res: Response, text: string): Attempt {
  const { type, message } = errorBody(text);
  const status = res.status;
  const requestId = res.headers.get('request-id');
  const detail = `${message ?? (text.slice(0, 200) || res.statusText || 'no details')}${requestId ? ` (request ${requestId})` : ''}`;
  const kind =
    status === 529 || type === 'overloaded_error'
      ? 'overloaded'
      : status === 429 || type === 'rate_limit_error'
        ? 'rate_limited'
        : 'request_failed';
  const error = new ModelError(kind, `The model API answered ${status}${type ? ` ${type}` : ''}: ${detail}`, {
    status,
  });
  return { ok: false, error, retry: shouldRetry(res), waitMs: retryAfterMs(res.headers) };
}

function errorBody(text: string): { type: string | null; message: string | null } {
  const error = parseJsonObject(text)?.error;
  if (!isObject(error)) return { type: null, message: null };
  return {
    type: typeof error.type === 'string' ? error.type : null,
    message: typeof error.message === 'string' ? error.message : null,
  };
}

function shouldRetry(res: Response): boolean {
  const header = res.headers.get('x-should-retry');
  if (header === 'true') return true;
  if (header === 'false') return false;
  return res.status === 408 || res.status === 409 || res.status === 429 || res.status >= 500;
}

/** The wait the server asked for, capped; null when it asked for none (or nonsense). */
export function retryAfterMs(headers: Headers, now: number = Date.now()): number | null {
  let ms: number | null = null;
  const millis = headers.get('retry-after-ms');
  if (millis !== null && Number.isFinite(Number.parseFloat(millis))) ms = Number.parseFloat(millis);
  const after = headers.get('retry-after');
  if (ms === null && after !== null) {
    const seconds = Number.parseFloat(after);
    ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(after) - now;
  }
  if (ms === null || !(ms > 0)) return null;
  return Math.min(ms, MAX_RETRY_AFTER_MS);
}

function backoffMs(retry: number): number {
  const delay = Math.min(INITIAL_RETRY_DELAY_MS * 2 ** retry, MAX_RETRY_DELAY_MS);
  return delay * (1 - Math.random() * 0.25);
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
