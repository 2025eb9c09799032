import type { Hono } from 'hono';
import { revokeEnvironmentKey } from '../../auth/credentials.js';
import { ADMIN, authorize } from '../auth.js';
import { drainBody } from '../body.js';
import { document } from '../openapi.js';
import { noContent } from '../reply.js';
import type { AppEnv } from '../types.js';
import { ENVIRONMENT_KEYS, environmentParam, keyNotFound, keyParam } from './management-scope.js';

/**
 * POST /v1/environments/{id}/keys/{key_id}/revoke — the key stops authenticating with the
 * next request to this replica, and within `CREDENTIAL_TTL_MS` on every other. Idempotent (204 again); a key of another environment is a 404 exactly like
 * an unknown one.
 */
export function registerEnvironmentKeysRevoke(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: `${ENVIRONMENT_KEYS}/:keyId/revoke`,
    summary: 'Revoke an environment key',
    credentials: ['admin_api_key'],
    responses: { 204: { description: 'revoked; no body' } },
  });
  app.post(`${ENVIRONMENT_KEYS}/:keyId/revoke`, async (c) => {
    await authorize(c, ADMIN);
    await drainBody(c);
    const environmentId = environmentParam(c);
    const keyId = keyParam(c, 'envkey');
    if (!(await revokeEnvironmentKey(c.get('deps').db, environmentId, keyId))) throw keyNotFound('envkey');
    c.get('credentials').forgetKey(keyId);
    return noContent(c);
  });
}
