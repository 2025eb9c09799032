import type { Context, Hono } from 'hono';
import type { AppEnv } from '../api/types.js';
import type { Database } from '../db/handle.js';
import { SignInRequired } from './gate.js';
import { apiFor, type CallApi } from './internal-api.js';
import { signedInKey } from './session.js';

/** What a console handler works with once the caller is a signed-in admin. */
export interface Operator {
  api: CallApi;
  db: Database;
}

/** The signed-in operator, or `SignInRequired` (a redirect to sign-in, or a 401 for live data). */
export async function operator(app: Hono<AppEnv>, c: Context<AppEnv>): Promise<Operator> {
  const key = await signedInKey(c);
  if (key === null) throw new SignInRequired();
  return { api: apiFor(app, c, key), db: c.get('deps').db };
}

/** Fixed notices a redirect may ask a page to show (never text taken from the URL). */
const NOTICES: Record<string, string> = {
  'stop-requested': 'Stop requested: the worker is told on its next heartbeat.',
  stopped: 'The item was stopped.',
  'session-cancelled': 'The session was cancelled: its items in flight are stopped.',
  'key-revoked': 'The key was revoked. Workers using it are refused from now on.',
};

export function noticeFor(c: Context<AppEnv>): string | undefined {
  const done = c.req.query('done');
  return done !== undefined && Object.hasOwn(NOTICES, done) ? NOTICES[done] : undefined;
}
