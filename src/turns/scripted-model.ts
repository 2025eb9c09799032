/**
 * A model that answers from a script: an array of Messages API responses
 * (`{"content": [...], "stop_reason": ..., "usage": {...}}`), for tests, examples and offline
 * demos (`LEASEHOLD_MODEL=scripted:<file>`).
 *
 * Why it answers by `context.callIndex` rather than by counting its own calls: the index is
 * how many model calls the session's brain recorded, so a brain restarted on another process
 * (or after a crash) gets the next scripted response, not the first one again. Reading the file
 * is the entry point's business; this module only parses its text.
 */
import {
  type ContentBlock,
  type Model,
  type ModelCallContext,
  ModelError,
  type ModelRequest,
  type ModelResponse,
} from './model.js';

/** A script that cannot be used, naming the response (and block) at fault. */
export class ScriptError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ScriptError';
  }
}

export class ScriptedModel implements Model {
  readonly #responses: readonly ModelResponse[];
  readonly #calls: Array<{ request: ModelRequest; context: ModelCallContext }> = [];

  constructor(responses: readonly ModelResponse[]) {
    // A copy, so a caller mutating its array (or a served response) cannot rewrite the script.
    this.#responses = structuredClone([...responses]);
  }

  /** How many responses the script holds. */
  get length(): number {
    return this.#responses.length;
  }

  /** Every call made so far, in order: what a test asserts the brain sent. */
  calls(): ReadonlyArray<{ request: ModelRequest; context: ModelCallContext }> {
    return this.#calls;
  }

  async create(request: ModelRequest, context: ModelCallContext): Promise<ModelResponse> {
    context.signal?.throwIfAborted();
    const n = context.callIndex;
    if (!Number.isInteger(n) || n < 0) {
      throw new TypeError(`scripted model: callIndex must be a non-negative integer, not ${n}`);
    }
    this.#calls.push({ request, context });
    const response = this.#responses[n];
    if (response === undefined) {
      throw new ModelError(
        'script_exhausted',
        `The scripted model has ${this.#responses.length} responses; call ${n} of session ${context.sessionId} has none.`,
      );
    }
    return structuredClone(response);
  }
}

/**
 * Parses and validates a script file's text: a JSON array of response objects, each with a
 * `content` array of text / thinking / redacted_thinking / tool_use blocks and a
 * `stop_reason` (a string or null); `usage` (an object), `id` and `model` are optional.
 * Throws ScriptError naming the index of the first bad response.
 */
export function parseScript(text: string): ModelResponse[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ScriptError(`script: not JSON (${(err as Error).message})`);
  }
  if (!Array.isArray(value)) throw new ScriptError('script: must be a JSON array of Messages API responses');
  return value.map((item, i) => parseResponse(item, `script[${i}]`));
}

function parseResponse(item: unknown, at: string): ModelResponse {
  if (!isObject(item)) throw new ScriptError(`${at}: must be an object`);
  if (!Array.isArray(item.content)) throw new ScriptError(`${at}: needs a "content" array`);
  if (!('stop_reason' in item) || !(item.stop_reason === null || typeof item.stop_reason === 'string')) {
    throw new ScriptError(`${at}: needs a "stop_reason" (a string or null)`);
  }
  if (item.usage !== undefined && !isObject(item.usage))
    throw new ScriptError(`${at}: "usage" must be an object`);
  for (const key of ['id', 'model'] as const) {
    if (item[key] !== undefined && typeof item[key] !== 'string') {
      throw new ScriptError(`${at}: "${key}" must be a string`);
    }
  }
  const content = item.content.map((block, j) => parseBlock(block, `${at}.content[${j}]`));
  const response: ModelResponse = {
    content,
    stop_reason: item.stop_reason as string | null,
    usage: (item.usage as Record<string, unknown> | undefined) ?? {},
  };
  if (typeof item.id === 'string') response.id = item.id;
  if (typeof item.model === 'string') response.model = item.model;
  return response;
}

/** The string fields each block type must carry (tool_use also needs an object `input`). */
const BLOCK_FIELDS: Record<ContentBlock['type'], readonly string[]> = {
  text: ['text'],
  thinking: ['thinking', 'signature'],
  redacted_thinking: ['data'],
  tool_use: ['id', 'name'],
};

function parseBlock(block: unknown, at: string): ContentBlock {
  if (!isObject(block)) throw new ScriptError(`${at}: must be an object`);
  const type = block.type;
  if (typeof type !== 'string' || !Object.hasOwn(BLOCK_FIELDS, type)) {
    throw new ScriptError(
      `${at}: type must be one of ${Object.keys(BLOCK_FIELDS).join(', ')}, not ${JSON.stringify(type)}`,
    );
  }
  for (const field of BLOCK_FIELDS[type as ContentBlock['type']]) {
    if (typeof block[field] !== 'string')
      throw new ScriptError(`${at}: a ${type} block needs a string "${field}"`);
  }
  if (type === 'tool_use' && !isObject(block.input)) {
    throw new ScriptError(`${at}: a tool_use block needs an object "input"`);
  }
  return block as unknown as ContentBlock;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
