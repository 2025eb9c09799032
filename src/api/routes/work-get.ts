import type { Hono } from 'hono';
import { getWork } from '../../queue/index.js';
import { API_KEY, authorize } from '../auth.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { toWireWork, wireWorkSchema } from '../wire.js';
import { environmentId, WORK_BASE, workId } from './work-scope.js';

/** GET /work/{id} — one item. API keys only, as the official API: workers have poll and list. */
export function registerWorkGet(app: Hono<AppEnv>): void {
  document({
    method: 'get',
    path: `${WORK_BASE}/:workId`,
    summary: 'Retrieve a work item',
    credentials: ['admin_api_key', 'platform_api_key'],
    responses: { 200: { description: 'the work item', schema: wireWorkSchema } },
  });
  app.get(`${WORK_BASE}/:workId`, async (c) => {
    const env = environmentId(c);
    await authorize(c, API_KEY, env);
    return reply(c, toWireWork(await getWork(c.get('deps').db, env, workId(c))));
  });
}
