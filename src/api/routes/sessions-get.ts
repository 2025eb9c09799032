import type { Hono } from 'hono';
import { ANY_KEY, authorize } from '../auth.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { SESSION, visibleSession } from './session-scope.js';
import { toWireSession, wireSessionSchema } from './session-wire.js';

/**
 * GET /v1/sessions/{id} — the session. An environment key may read its own environment's
 * sessions (the SDK's worker reads the session of every item it takes); another environment's
 * answers 404 like a missing one, and so does a session the platform lane opened.
 */
export function registerSessionsGet(app: Hono<AppEnv>): void {
  document({
    method: 'get',
    path: SESSION,
    summary: 'Retrieve a session',
    credentials: ['admin_api_key', 'platform_api_key', 'environment_key'],
    responses: { 200: { description: 'the session', schema: wireSessionSchema } },
  });
  app.get(SESSION, async (c) => {
    const caller = await authorize(c, ANY_KEY);
    return reply(c, toWireSession(await visibleSession(c, caller)));
  });
}
