import type { Hono } from 'hono';
import { archiveSession } from '../../sessions/index.js';
import { API_KEY, authorize } from '../auth.js';
import { drainBody } from '../body.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { SESSION, sessionNotFound, sessionParam } from './session-scope.js';
import { toWireSession, wireSessionSchema } from './session-wire.js';

/** POST /v1/sessions/{id}/archive — hides it from the list (idempotent); its log stays readable. */
export function registerSessionsArchive(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: `${SESSION}/archive`,
    summary: 'Archive a session',
    credentials: ['admin_api_key', 'platform_api_key'],
    responses: { 200: { description: 'the session', schema: wireSessionSchema } },
  });
  app.post(`${SESSION}/archive`, async (c) => {
    await authorize(c, API_KEY);
    const id = sessionParam(c);
    await drainBody(c);
    const session = await archiveSession(c.get('deps').db, id);
    if (!session) throw sessionNotFound();
    return reply(c, toWireSession(session));
  });
}
