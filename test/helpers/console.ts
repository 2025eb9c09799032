/**
 * Operator console fixtures: an admin signed in through the sign-in form, and page loads and
 * form posts that carry its cookie and the console's own origin, as a browser would send them.
 */
import type { Hono } from 'hono';
import { expect } from 'vitest';
import type { AppEnv } from '../../src/api/types.js';
import { issueApiKey } from '../../src/auth/credentials.js';
import type { Database } from '../../src/db/handle.js';
import { testApi } from './api.js';

/** The origin `app.request` gives a bare path. */
export const ORIGIN = 'http://localhost';
export const COOKIE_NAME = 'leasehold_console';

export interface ConsoleSession {
  app: Hono<AppEnv>;
  /** The admin key's secret and id. */
  key: string;
  keyId: string;
  /** The `Cookie` header value the browser sends back. */
  cookie: string;
  /** GET with the cookie. */
  page(path: string, headers?: Record<string, string>): Promise<Response>;
  /** A url-encoded form POST with the cookie and `Origin: http://localhost` (override via headers). */
  post(path: string, form?: Record<string, string>, headers?: Record<string, string>): Promise<Response>;
}

/** A url-encoded form body and its content type. */
export function formInit(form: Record<string, string>, headers: Record<string, string> = {}): RequestInit {
  return {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
  };
}

/** POSTs the sign-in form from the console's origin. */
export function postSignIn(app: Hono<AppEnv>, key: string): Promise<Response> {
  return Promise.resolve(app.request('/console/sign-in', formInit({ key }, { origin: ORIGIN })));
}

/** The `name=value` part of the console's Set-Cookie, or null when the response sets none. */
export function consoleCookie(res: Response): string | null {
  const set = res.headers.getSetCookie().find((c) => c.startsWith(`${COOKIE_NAME}=`));
  return set ? set.split(';')[0]! : null;
}

/** Signs a fresh admin key in (on `app`, or a fresh app over `db`) and returns the browser's side. */
export async function consoleSession(db: Database, app?: Hono<AppEnv>): Promise<ConsoleSession> {
  const theApp = app ?? testApi(db).app;
  const issued = await issueApiKey(db, 'console admin', 'admin', null);
  const res = await postSignIn(theApp, issued.key);
  expect(res.status, await res.clone().text()).toBe(303);
  const cookie = consoleCookie(res);
  if (!cookie) throw new Error('sign-in set no console cookie');
  return withCookie(theApp, cookie, issued.key, issued.id);
}

/** The same browser's cookie used against `app` (a fresh app skips the credential cache). */
export function withCookie(app: Hono<AppEnv>, cookie: string, key = '', keyId = ''): ConsoleSession {
  return {
    app,
    key,
    keyId,
    cookie,
    page: (path, headers = {}) => Promise.resolve(app.request(path, { headers: { cookie, ...headers } })),
    post: (path, form = {}, headers = {}) =>
      Promise.resolve(app.request(path, formInit(form, { origin: ORIGIN, cookie, ...headers }))),
  };
}

/** Asserts an HTML answer of `status` and returns its text. */
export async function html(res: Response, status = 200): Promise<string> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^text\/html/);
  return text;
}
