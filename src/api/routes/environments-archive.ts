import type { Hono } from 'hono';
import { archiveEnvironment } from '../../environments/index.js';
import { ADMIN, authorize } from '../auth.js';
import { drainBody } from '../body.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { toWireEnvironment, wireEnvironmentSchema } from './environment-wire.js';
import { ENVIRONMENT, environmentNotFound, environmentParam } from './management-scope.js';

/**
 * POST /v1/environments/{id}/archive — sets `archived_at` once (idempotent: archiving again
 * changes nothing). The SDK sends no body and none is read. The work API keeps serving an
 * archived environment; it only stops being updatable and issuing keys.
 */
export function registerEnvironmentsArchive(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: `${ENVIRONMENT}/archive`,
    summary: 'Archive an environment',
    credentials: ['admin_api_key'],
    responses: { 200: { description: 'the archived environment', schema: wireEnvironmentSchema } },
  });
  app.post(`${ENVIRONMENT}/archive`, async (c) => {
    await authorize(c, ADMIN);
    await drainBody(c);
    const environment = await archiveEnvironment(c.get('deps').db, environmentParam(c));
    if (!environment) throw environmentNotFound();
    return reply(c, toWireEnvironment(environment));
  });
}
