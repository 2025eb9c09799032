/**
 * What the journal routes share: the path base, the run and step tokens (each must be one NATS
 * subject token, so the alphabet is narrower than NATS allows: nothing a URL or a log could
 * garble), and the journal connection, which a server without NATS_URL does not have.
 */
import type { Context } from 'hono';
import { badRequest, serviceUnavailable } from '../errors.js';
import type { AppEnv, JournalDeps } from '../types.js';
import { PLATFORM_BASE } from './platform-scope.js';

export const RUN_PATH = `${PLATFORM_BASE}/runs/:run`;

/** A run or step id: one NATS subject token, in an alphabet nothing can garble. */
export const JOURNAL_TOKEN = /^[A-Za-z0-9_-]{1,128}$/;

/** `value` as a run or step id, or a 400 before it can reach a subject. */
export function journalToken(name: 'run' | 'step', value: string): string {
  if (!JOURNAL_TOKEN.test(value)) throw badRequest(`${name} must be 1–128 characters of [A-Za-z0-9_-]`);
  return value;
}

/** The run or step id in the path, or a 400. */
export function pathToken(c: Context<AppEnv>, name: 'run' | 'step'): string {
  return journalToken(name, c.req.param(name) ?? '');
}

/**
 * The journal connection, or 503: without NATS the server still runs the queue. Asked for only
 * once the request is known to read the journal, so a host that connects on demand does not
 * connect for a request that fails its checks first.
 */
export function journalDeps(c: Context<AppEnv>): Promise<JournalDeps> {
  const journal = c.get('deps').journal;
  if (!journal) throw serviceUnavailable('the journal is not configured on this server (set NATS_URL)');
  return journal();
}
