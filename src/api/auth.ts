/**
 * Who is calling. A secret arrives as `Authorization: Bearer <secret>` (what the SDK sends,
 * for environment keys and API keys alike) or as `x-api-key`; it is resolved once per
 * request. Each route then states which credentials it accepts with one guard call.
 */
import type { Context } from 'hono';
import { type ApiKeyScope, type Principal, resolveCredential } from '../auth/credentials.js';
import { unauthorized } from './errors.js';
import type { AppEnv } from './types.js';

const BEARER = /^Bearer (.+)$/;

/** The caller's principal; throws 401 when no credential or an unknown one is presented. */
export async function principal(c: Context<AppEnv>): Promise<Principal> {
  const cached = c.get('principal');
  if (cached) return cached;
  const secret = presentedSecret(c);
  if (secret === null) throw unauthorized('missing credentials: send Authorization: Bearer <key>');
  const found = await lookUpCredential(c, secret);
  if (!found) throw unauthorized('invalid credentials');
  c.set('principal', found);
  return found;
}

/**
 * Who `secret` belongs to, or null: every credential this app accepts is resolved here. A host
 * that hands the app LEASEHOLD_ADMIN_KEY (`deps.adminKey`, Workers) has it ensured first, once
 * per app, so the configured key is live before the first lookup that could present it.
 */
export async function lookUpCredential(c: Context<AppEnv>, secret: string): Promise<Principal | null> {
  const { db, adminKey, log } = c.get('deps');
  if (adminKey) await c.get('configuredAdminKey').ensure(db, adminKey, log);
  return resolveCredential(db, secret, c.get('credentials'));
}

function presentedSecret(c: Context<AppEnv>): string | null {
  const apiKeys = c.req.raw.headers.get('x-api-key');
  if (apiKeys?.includes(',')) throw unauthorized('multiple x-api-key headers');
  const authorization = c.req.header('authorization');
  if (authorization !== undefined && authorization !== '') {
    const m = BEARER.exec(authorization);
    if (!m || m[1]!.trim() === '')
      throw unauthorized('missing credentials: send Authorization: Bearer <key>');
    return m[1]!.trim();
  }
  if (apiKeys !== null && apiKeys.trim() !== '') return apiKeys.trim();
  return null;
}

export type Accept = { environmentKey?: boolean; apiKey?: readonly ApiKeyScope[] };

const ALL_SCOPES: readonly ApiKeyScope[] = ['admin', 'platform'];
export const ADMIN: Accept = { apiKey: ['admin'] };
export const PLATFORM: Accept = { apiKey: ALL_SCOPES };
export const ENVIRONMENT_KEY: Accept = { environmentKey: true };
export const ANY_KEY: Accept = { environmentKey: true, apiKey: ALL_SCOPES };
export const API_KEY: Accept = { apiKey: ALL_SCOPES };

/**
 * Requires a credential the route accepts. An environment key is valid only for the
 * environment in the path; an API key only within its scopes.
 */
export async function authorize(
  c: Context<AppEnv>,
  accept: Accept,
  environmentId?: string,
): Promise<Principal> {
  const p = await principal(c);
  if (p.kind === 'environment') {
    if (!accept.environmentKey) throw unauthorized('this endpoint does not accept an environment key');
    if (environmentId !== undefined && p.environmentId !== environmentId) {
      throw unauthorized('environment key is not valid for this environment');
    }
    return p;
  }
  if (!accept.apiKey) throw unauthorized('this endpoint needs an environment key');
  if (!accept.apiKey.includes(p.scope))
    throw unauthorized(`this endpoint does not accept a ${p.scope} API key`);
  return p;
}
