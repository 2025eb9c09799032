import type { Hono } from 'hono';
import { getEnvironment } from '../../environments/index.js';
import { ADMIN, authorize } from '../auth.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { toWireEnvironment, wireEnvironmentSchema } from './environment-wire.js';
import { ENVIRONMENT, environmentNotFound, environmentParam } from './management-scope.js';

/** GET /v1/environments/{id} — one environment, archived or not. */
export function registerEnvironmentsGet(app: Hono<AppEnv>): void {
  document({
    method: 'get',
    path: ENVIRONMENT,
    summary: 'Retrieve an environment',
    credentials: ['admin_api_key'],
    responses: { 200: { description: 'the environment', schema: wireEnvironmentSchema } },
  });
  app.get(ENVIRONMENT, async (c) => {
    await authorize(c, ADMIN);
    const environment = await getEnvironment(c.get('deps').db, environmentParam(c));
    if (!environment) throw environmentNotFound();
    return reply(c, toWireEnvironment(environment));
  });
}
