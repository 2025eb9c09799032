import type { Hono } from 'hono';
import { listEnvironmentKeys } from '../../auth/credentials.js';
import { getEnvironment } from '../../environments/index.js';
import { ADMIN, authorize } from '../auth.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { listOf, toWireEnvironmentKey, wireEnvironmentKeySchema } from './key-wire.js';
import { ENVIRONMENT_KEYS, environmentNotFound, environmentParam } from './management-scope.js';

/**
 * GET /v1/environments/{id}/keys — the environment's keys that are not revoked (expired ones
 * included, so they can be cleaned up), newest first, in one page. Never a secret or hash.
 */
export function registerEnvironmentKeysList(app: Hono<AppEnv>): void {
  document({
    method: 'get',
    path: ENVIRONMENT_KEYS,
    summary: "List an environment's keys (without secrets)",
    credentials: ['admin_api_key'],
    responses: { 200: { description: 'every unrevoked key', schema: listOf(wireEnvironmentKeySchema) } },
  });
  app.get(ENVIRONMENT_KEYS, async (c) => {
    await authorize(c, ADMIN);
    const id = environmentParam(c);
    const { db } = c.get('deps');
    if (!(await getEnvironment(db, id))) throw environmentNotFound();
    const keys = await listEnvironmentKeys(db, id);
    return reply(c, { data: keys.map(toWireEnvironmentKey), next_page: null });
  });
}
