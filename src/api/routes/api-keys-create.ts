import type { Hono } from 'hono';
import { issueApiKey } from '../../auth/credentials.js';
import { ADMIN, authorize } from '../auth.js';
import { parseWith, readJson } from '../body.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { apiKeyBody, toWireIssuedApiKey, wireIssuedApiKeySchema } from './key-wire.js';
import { API_KEYS, NO_STORE } from './management-scope.js';

/**
 * POST /v1/api_keys `{name, scope, expires_in_seconds?}` — issues an API key: `admin`
 * (management and everything else) or `platform` (the platform lane). The secret is in this
 * answer only (201, `Cache-Control: no-store`).
 */
export function registerApiKeysCreate(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: API_KEYS,
    summary: 'Issue an API key (the secret is shown once)',
    credentials: ['admin_api_key'],
    body: apiKeyBody,
    responses: { 201: { description: 'the key, with its secret', schema: wireIssuedApiKeySchema } },
  });
  app.post(API_KEYS, async (c) => {
    await authorize(c, ADMIN);
    const body = parseWith(apiKeyBody, await readJson(c));
    const issued = await issueApiKey(
      c.get('deps').db,
      body.name,
      body.scope,
      body.expires_in_seconds ?? null,
    );
    return reply(c, toWireIssuedApiKey(issued), 201, NO_STORE);
  });
}
