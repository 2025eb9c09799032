/**
 * Request bodies: read with a size cap, parsed as JSON, refused with a clear 400/413 when
 * they are not what the route takes — never passed on to SQL half-checked.
 */
import type { Context } from 'hono';
import * as z from 'zod/mini';
import { ApiError, badRequest } from './errors.js';
import type { AppEnv } from './types.js';
import './zod-locale.js';

/** Default body cap; the work metadata patch allows more (the reference's 4 MiB). */
export const MAX_BODY_BYTES = 1024 * 1024;
export const MAX_PATCH_BODY_BYTES = 4 * 1024 * 1024;
/**
 * Nesting cap. No route takes more than a few levels, so deeper JSON is never a real request;
 * refusing it up front keeps a megabyte of `[[[[…` away from every recursive walk after us.
 */
const MAX_JSON_DEPTH = 32;

/** The body as JSON; an empty body is `undefined`. */
export async function readJson(c: Context<AppEnv>, maxBytes = MAX_BODY_BYTES): Promise<unknown> {
  const bytes = await readBytes(c, maxBytes);
  if (bytes === null) return undefined;
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  if (text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest('request body is not valid JSON');
  }
  // Postgres cannot store U+0000 in text or jsonb; refuse it here rather than fail later.
  if (text.includes('\\u0000') || text.includes('\u0000'))
    throw badRequest('request body must not contain U+0000');
  if (nestsDeeper(text, MAX_JSON_DEPTH))
    throw badRequest(`request body nests deeper than ${MAX_JSON_DEPTH} levels`);
  // An escaped lone surrogate (`"\udfff"`) parses into a string no jsonb or text column takes.
  if (SURROGATE_ESCAPE.test(text) && hasLoneSurrogate(value))
    throw badRequest('request body must not contain unpaired UTF-16 surrogates');
  return value;
}

/** A console form post's fields: url-encoded, at most `maxBytes`, no U+0000. */
export async function readForm(c: Context<AppEnv>, maxBytes = 16 * 1024): Promise<URLSearchParams> {
  const type = c.req.header('content-type') ?? '';
  if (!/^application\/x-www-form-urlencoded\b/i.test(type))
    throw badRequest('a form must be sent as application/x-www-form-urlencoded');
  const bytes = await readBytes(c, maxBytes);
  const text = bytes === null ? '' : new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  const form = new URLSearchParams(text);
  for (const value of form.values())
    if (value.includes('\u0000')) throw badRequest('form fields must not contain U+0000');
  return form;
}

/**
 * Reads and drops the body of a route that takes none, so that a request whose body never
 * arrived whole (a broken chunk, a client gone mid-upload) is refused before the route acts
 * on it. A request without a body costs a header check.
 */
export async function drainBody(c: Context<AppEnv>): Promise<void> {
  if (!c.req.header('content-length') && !c.req.header('transfer-encoding')) return;
  await readBytes(c, MAX_BODY_BYTES);
}

/**
 * The body's bytes, at most `maxBytes` (413 beyond), or null without one. A body that did not
 * arrive whole — shorter than its Content-Length, or cut off with the connection — is a 400:
 * a truncated body can still parse (a JSON object ends before its chunk framing does), and the
 * route must not act on what the client may never have finished sending.
 */
async function readBytes(c: Context<AppEnv>, maxBytes: number): Promise<Uint8Array | null> {
  const declared = Number(c.req.header('content-length') ?? Number.NaN);
  if (declared > maxBytes) throw tooLarge(maxBytes);
  let bytes: Uint8Array | null;
  try {
    // A declared length within the cap is read whole: the runtime holds it to that length,
    // and the adapters read a whole body far more cheaply than through a stream reader.
    if (Number.isInteger(declared)) {
      bytes = new Uint8Array(await c.req.arrayBuffer());
      // Fewer bytes than declared is a body cut off; counting them is enough to tell, and
      // cheaper than the abort signal, which Node's adapter builds per request on first use.
      if (bytes.byteLength < declared) throw incomplete();
    } else {
      bytes = await readCapped(c, maxBytes);
      // A chunked body has no length to count against: the connection's end tells instead.
      if (c.req.raw.signal.aborted) throw incomplete();
    }
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw incomplete();
  }
  if (bytes !== null && bytes.byteLength > maxBytes) throw tooLarge(maxBytes);
  return bytes;
}

const incomplete = () => badRequest('request body is incomplete: the connection ended before it did');

/** A `\uD800`–`\uDFFF` escape anywhere: the only way a lone surrogate gets through JSON.parse. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
const LONE_SURROGATE = /\p{Cs}/u;

/** Whether any key or string in `value` holds an unpaired surrogate; iterative, for deep values. */
function hasLoneSurrogate(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (LONE_SURROGATE.test(v)) return true;
    } else if (Array.isArray(v)) {
      stack.push(...v);
    } else if (v !== null && typeof v === 'object') {
      for (const [k, inner] of Object.entries(v)) {
        if (LONE_SURROGATE.test(k)) return true;
        stack.push(inner);
      }
    }
  }
  return false;
}

/** Whether valid JSON `text` opens more than `max` arrays or objects inside one another. */
function nestsDeeper(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === BACKSLASH) i++;
      else if (ch === QUOTE) inString = false;
    } else if (ch === QUOTE) inString = true;
    else if (ch === 0x5b || ch === 0x7b) {
      if (++depth > max) return true;
    } else if (ch === 0x5d || ch === 0x7d) depth--;
  }
  return false;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** A body of undeclared length (chunked), read no further than the cap. */
async function readCapped(c: Context<AppEnv>, maxBytes: number): Promise<Uint8Array | null> {
  const body = c.req.raw.body;
  if (!body) return null;
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw tooLarge(maxBytes);
    }
    chunks.push(value);
  }
  return concat(chunks, size);
}

/** Longest piece of a caller's key repeated in an error: a refused key may be megabytes long. */
const MAX_ECHOED_KEY = 32;

/** Parses with a schema, answering 400 with the first problem's path and message. */
export function parseWith<T>(schema: z.core.$ZodType<T>, value: unknown, what = 'request body'): T {
  const result = z.safeParse(schema, value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const where = issue.path.length ? issue.path.map((p) => echo(String(p))).join('.') : what;
  // A nested unknown field is named by its whole path (`tools.0.configs.1.allowed_domains`).
  if (issue.code === 'unrecognized_keys')
    throw badRequest(
      `unknown field "${[...issue.path, issue.keys[0]!].map((p) => echo(String(p))).join('.')}"`,
    );
  // A refused record key says only "Invalid key in record"; the key schema's own issue says why.
  const message = issue.code === 'invalid_key' ? (issue.issues[0]?.message ?? issue.message) : issue.message;
  throw badRequest(`${where}: ${message}`);
}

function echo(key: string): string {
  return key.length > MAX_ECHOED_KEY ? `${key.slice(0, MAX_ECHOED_KEY)}…` : key;
}

function tooLarge(maxBytes: number): ApiError {
  return new ApiError(413, 'request_too_large', `request body is larger than ${maxBytes} bytes`);
}

function concat(chunks: Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}
