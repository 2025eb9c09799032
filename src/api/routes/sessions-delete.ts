import type { Hono } from 'hono';
import * as z from 'zod/mini';
import { deleteSession } from '../../sessions/index.js';
import { API_KEY, authorize } from '../auth.js';
import { drainBody } from '../body.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { SESSION, sessionNotFound, sessionParam } from './session-scope.js';

/**
 * DELETE /v1/sessions/{id} — the session, its log and its work items, at once. Its open
 * streams end with `session.deleted`; a worker holding one of its items is refused from its
 * next call (the item is gone).
 */
export function registerSessionsDelete(app: Hono<AppEnv>): void {
  document({
    method: 'delete',
    path: SESSION,
    summary: 'Delete a session',
    credentials: ['admin_api_key', 'platform_api_key'],
    responses: {
      200: {
        description: 'deleted',
        schema: z.object({ id: z.string(), type: z.literal('session_deleted') }),
      },
    },
  });
  app.delete(SESSION, async (c) => {
    await authorize(c, API_KEY);
    const id = sessionParam(c);
    await drainBody(c);
    if (!(await deleteSession(c.get('deps').db, id))) throw sessionNotFound();
    return reply(c, { id, type: 'session_deleted' });
  });
}
