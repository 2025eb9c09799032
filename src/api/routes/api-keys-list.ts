import type { Hono } from 'hono';
import { listApiKeys } from '../../auth/credentials.js';
import { ADMIN, authorize } from '../auth.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { listOf, toWireApiKey, wireApiKeySchema } from './key-wire.js';
import { API_KEYS } from './management-scope.js';

/** GET /v1/api_keys — every API key that is not revoked, newest first, in one page. Never a secret. */
export function registerApiKeysList(app: Hono<AppEnv>): void {
  document({
    method: 'get',
    path: API_KEYS,
    summary: 'List API keys (without secrets)',
    credentials: ['admin_api_key'],
    responses: { 200: { description: 'every unrevoked key', schema: listOf(wireApiKeySchema) } },
  });
  app.get(API_KEYS, async (c) => {
    await authorize(c, ADMIN);
    const keys = await listApiKeys(c.get('deps').db);
    return reply(c, { data: keys.map(toWireApiKey), next_page: null });
  });
}
