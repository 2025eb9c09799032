import type { Hono } from 'hono';
import { revokeApiKey } from '../../auth/credentials.js';
import { ADMIN, authorize } from '../auth.js';
import { drainBody } from '../body.js';
import { document } from '../openapi.js';
import { noContent } from '../reply.js';
import type { AppEnv } from '../types.js';
import { API_KEYS, keyNotFound, keyParam } from './management-scope.js';

/**
 * POST /v1/api_keys/{id}/revoke — the key stops authenticating with the next request to this
 * replica (within `CREDENTIAL_TTL_MS` on every other), even when it is the caller's own. Idempotent (204 again); unknown → 404. Revoking every admin
 * key is recoverable: the Node entry restores one at its next start (LEASEHOLD_ADMIN_KEY's
 * comes back live unless a newer value has replaced it, or a new one is generated). On Workers the next start is a new isolate
 * (a deploy, a changed secret, or whenever the platform starts one): LEASEHOLD_ADMIN_KEY's
 * comes back with its first authenticated request, so a configured key is retired for good
 * by removing the setting, then revoking it here.
 */
export function registerApiKeysRevoke(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: `${API_KEYS}/:keyId/revoke`,
    summary: 'Revoke an API key',
    credentials: ['admin_api_key'],
    responses: { 204: { description: 'revoked; no body' } },
  });
  app.post(`${API_KEYS}/:keyId/revoke`, async (c) => {
    await authorize(c, ADMIN);
    await drainBody(c);
    const keyId = keyParam(c, 'apikey');
    if (!(await revokeApiKey(c.get('deps').db, keyId))) throw keyNotFound('apikey');
    c.get('credentials').forgetKey(keyId);
    return noContent(c);
  });
}
