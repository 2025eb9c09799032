import type { Hono } from 'hono';
import { stats } from '../../queue/index.js';
import { ANY_KEY, authorize } from '../auth.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { toWireStats, wireStatsSchema } from '../wire.js';
import { environmentId, WORK_BASE } from './work-scope.js';

/** GET /work/stats — depth, pending, oldest_queued_at, workers_polling. Environment key or API key. */
export function registerWorkStats(app: Hono<AppEnv>): void {
  document({
    method: 'get',
    path: `${WORK_BASE}/stats`,
    summary: 'Work queue statistics',
    credentials: ['environment_key', 'admin_api_key', 'platform_api_key'],
    responses: { 200: { description: 'the statistics', schema: wireStatsSchema } },
  });
  app.get(`${WORK_BASE}/stats`, async (c) => {
    const env = environmentId(c);
    await authorize(c, ANY_KEY, env);
    return reply(c, toWireStats(await stats(c.get('deps').db, env)));
  });
}
