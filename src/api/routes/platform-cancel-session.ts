import type { Hono } from 'hono';
import * as z from 'zod/mini';
import { cancelSession } from '../../queue/index.js';
import { authorize, PLATFORM } from '../auth.js';
import { parseWith, readJson } from '../body.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { PLATFORM_BASE, pathSessionId } from './platform-scope.js';

/** No options yet; an empty body or `{}`, so a field sent in hope is refused, not ignored. */
export const platformCancelSessionBody = z.optional(z.strictObject({}));

/**
 * POST /v1/platform/sessions/{session_id}/cancel — stops every item the session has in
 * flight, whatever its kind, state or holder (a user interrupt), and answers how many. Each
 * holder's next proof-carrying write then fails with 409 `lease_lost_error`. An unknown
 * session stops nothing: 200 `{stopped: 0}`.
 */
export function registerPlatformCancelSession(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: `${PLATFORM_BASE}/sessions/:sessionId/cancel`,
    summary: 'Stop every in-flight item of a session',
    credentials: ['platform_api_key', 'admin_api_key'],
    // No `body`: the document can only mark a body required, and this one is optional (empty or {}).
    responses: {
      200: { description: 'how many items were stopped', schema: z.object({ stopped: z.int() }) },
      400: { description: 'session id is not 1–128 characters of [A-Za-z0-9_-]' },
    },
  });
  app.post(`${PLATFORM_BASE}/sessions/:sessionId/cancel`, async (c) => {
    await authorize(c, PLATFORM);
    const sessionId = pathSessionId(c);
    parseWith(platformCancelSessionBody, await readJson(c));
    return reply(c, { stopped: await cancelSession(c.get('deps').db, sessionId) });
  });
}
