/**
 * What every console response shares: security headers, errors as pages, and the sign-in gate.
 * Errors thrown by console handlers become HTML pages here (the app's own error handler answers
 * JSON for the API); the live JSON endpoints keep the API's envelope.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { ApiError, toApiError } from '../api/errors.js';
import type { AppEnv } from '../api/types.js';
import { errorPage } from './pages/error.js';
import { CONSOLE_BASE } from './session.js';

/** Thrown where a signed-in admin is needed: a 401 for the live endpoints, a redirect for pages. */
export class SignInRequired extends ApiError {
  constructor() {
    super(401, 'authentication_error', 'sign in to the console with an admin API key');
    this.name = 'SignInRequired';
  }
}

const SECURITY_HEADERS: Record<string, string> = {
  // Nothing but the app's own origin: no CDN, no inline script, no framing.
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

export function consoleGate(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await next();
    if (c.error) {
      const replacement = await failure(c, c.error);
      if (replacement) {
        c.res = undefined;
        c.res = replacement;
      }
    }
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) c.res.headers.set(k, v);
    if (!c.res.headers.has('cache-control')) c.res.headers.set('cache-control', 'no-store');
  };
}

const isLive = (c: Context<AppEnv>) => c.req.path.startsWith(`${CONSOLE_BASE}/live/`);

/** The response for an error a console handler threw; undefined keeps the app's JSON answer. */
async function failure(c: Context<AppEnv>, err: Error): Promise<Response | undefined> {
  if (err instanceof SignInRequired) {
    if (isLive(c)) return undefined;
    return c.redirect(`${CONSOLE_BASE}/sign-in`, 303);
  }
  if (isLive(c)) return undefined;
  const known = toApiError(err);
  if (!known)
    return c.html(errorPage(500, 'Something went wrong; the server log has the request id.', true), 500);
  return c.html(errorPage(known.status, known.message, known.status !== 401), known.status as 400);
}
