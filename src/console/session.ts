/**
 * Who is using the console. Sign-in takes an admin API key in a POST body and keeps it in a
 * session cookie: no Expires (gone when the browser session ends), HttpOnly (no script, so no
 * injected script, can read it), SameSite=Strict and scoped to /console. The key never enters a
 * URL, a page or a log; every request resolves it again, so a revoked key signs the console out
 * within the credential cache's TTL.
 */
import type { Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { lookUpCredential } from '../api/auth.js';
import { forbidden } from '../api/errors.js';
import type { AppEnv } from '../api/types.js';

export const CONSOLE_BASE = '/console';
const COOKIE = 'leasehold_console';

/** The signed-in admin key, or null (no cookie, or a key that is no longer a live admin key). */
export async function signedInKey(c: Context<AppEnv>): Promise<string | null> {
  const secret = getCookie(c, COOKIE);
  if (!secret) return null;
  const found = await lookUpCredential(c, secret);
  if (found?.kind !== 'api' || found.scope !== 'admin') return null;
  c.set('principal', found);
  return secret;
}

/** True when `secret` is a live admin key; then the browser keeps it for this session. */
export async function signIn(c: Context<AppEnv>, secret: string): Promise<boolean> {
  const found = await lookUpCredential(c, secret);
  if (found?.kind !== 'api' || found.scope !== 'admin') return false;
  setCookie(c, COOKIE, secret, {
    path: CONSOLE_BASE,
    httpOnly: true,
    sameSite: 'Strict',
    secure: new URL(c.req.url).protocol === 'https:',
  });
  return true;
}

export function signOut(c: Context<AppEnv>): void {
  deleteCookie(c, COOKIE, { path: CONSOLE_BASE });
}

/**
 * A state-changing request must come from a console page. SameSite=Strict already keeps the
 * cookie off cross-site requests; this refuses the rest (a sibling origin, a page that lost its
 * origin) by the browser's own Origin or Sec-Fetch-Site header.
 */
export function assertSameOrigin(c: Context<AppEnv>): void {
  const origin = c.req.header('origin');
  if (origin !== undefined && origin !== 'null') {
    if (origin === new URL(c.req.url).origin) return;
    throw forbidden('cross-origin form posts are refused');
  }
  if (c.req.header('sec-fetch-site') === 'same-origin') return;
  throw forbidden('a console form must be posted from the console');
}
