/**
 * Request bodies: read with a size cap, parsed as JSON, refused with a clear 400/413 when
 * they are not what the route takes — never passed on to SQL half-checked.
 */
import type { Context } from 'hono';
import type { z } from 'zod';
import { ApiError, badRequest } from './errors.js';
import type { AppEnv } from './types.js';

/** Default body cap; the work metadata patch allows more (the reference's 4 MiB). */
export const MAX_BODY_BYTES = 1024 * 1024;
export const MAX_PATCH_BODY_BYTES = 4 * 1024 * 1024;

/** The body as JSON; an empty body is `undefined`. */
export async function readJson(c: Context<AppEnv>, maxBytes = MAX_BODY_BYTES): Promise<unknown> {
  const declared = Number(c.req.header('content-length') ?? Number.NaN);
  if (declared > maxBytes) throw tooLarge(maxBytes);
  // A declared length within the cap is read whole: the runtime holds it to that length,
  // and the adapters read a whole body far more cheaply than through a stream reader.
  const bytes = Number.isInteger(declared)
    ? new Uint8Array(await c.req.arrayBuffer())
    : await readCapped(c, maxBytes);
  if (bytes === null) return undefined;
  if (bytes.byteLength > maxBytes) throw tooLarge(maxBytes);
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
  return value;
}

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

/** Parses with a schema, answering 400 with the first problem's path and message. */
export function parseWith<T>(schema: z.ZodType<T>, value: unknown, what = 'request body'): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const where = issue.path.length ? issue.path.join('.') : what;
  throw badRequest(
    issue.code === 'unrecognized_keys' ? `unknown field "${issue.keys[0]}"` : `${where}: ${issue.message}`,
  );
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
