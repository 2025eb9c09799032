import type { Context } from 'hono';
import type { AppEnv } from './types.js';

/**
 * Responses built here with every header they leave with, the request's `request-id`
 * included, so the app's middleware need not add it. On Node a response made from a plain
 * header record is written to the socket as it is; reading its `headers` to add one more
 * would first build a fetch `Headers` and then turn it back into a record, on every request.
 */
const complete = new WeakSet<Response>();

/** True for a response of `reply` or `noContent`: it already carries its `request-id`. */
export function carriesRequestId(res: Response): boolean {
  return complete.has(res);
}

/** A JSON response as the wire sends it: `application/json`, the body and a newline. */
export function reply(
  c: Context<AppEnv>,
  body: unknown,
  status = 200,
  headers: Record<string, string> = {},
): Response {
  const res = new Response(`${JSON.stringify(body)}\n`, {
    status,
    headers: { 'content-type': 'application/json', 'request-id': c.get('requestId'), ...headers },
  });
  complete.add(res);
  return res;
}

/** 204 with no body and no Content-Type at all (revocations and the platform lane's settlements). */
export function noContent(c: Context<AppEnv>): Response {
  const res = new Response(null, { status: 204, headers: { 'request-id': c.get('requestId') } });
  complete.add(res);
  return res;
}
