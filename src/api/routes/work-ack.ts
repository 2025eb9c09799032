import type { Hono } from 'hono';
import { authorize, ENVIRONMENT_KEY } from '../auth.js';
import { drainBody } from '../body.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { toWireWork, wireWorkSchema } from '../wire.js';
import { environmentId, WORK_BASE, workCalls, workId } from './work-scope.js';

/** POST /work/{id}/ack — queued → starting under a 30 s startup lease; idempotent. No body is read. */
export function registerWorkAck(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: `${WORK_BASE}/:workId/ack`,
    summary: 'Acknowledge a polled work item (queued → starting)',
    credentials: ['environment_key'],
    responses: { 200: { description: 'the work item', schema: wireWorkSchema } },
  });
  app.post(`${WORK_BASE}/:workId/ack`, async (c) => {
    const env = environmentId(c);
    await authorize(c, ENVIRONMENT_KEY, env);
    await drainBody(c);
    return reply(c, toWireWork(await workCalls(c).ack({ environmentId: env, workId: workId(c) })));
  });
}
