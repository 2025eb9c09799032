import type { Context } from 'hono';
import type { AppEnv } from './types.js';

/** A JSON response as the wire sends it: `application/json`, the body and a newline. */
export function reply(
  c: Context<AppEnv>,
  body: unknown,
  status = 200,
  headers: Record<string, string> = {},
): Response {
  return c.body(`${JSON.stringify(body)}\n`, status as 200, {
    'content-type': 'application/json',
    ...headers,
  });
}

/** 204 with no body and no Content-Type at all (revocations and the platform lane's settlements). */
export function noContent(): Response {
  return new Response(null, { status: 204 });
}
