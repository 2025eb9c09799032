import type { Hono } from 'hono';
import { deleteEnvironment } from '../../environments/index.js';
import { ADMIN, authorize } from '../auth.js';
import { drainBody } from '../body.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { wireEnvironmentDeletedSchema } from './environment-wire.js';
import { codedBadRequest, ENVIRONMENT, environmentNotFound, environmentParam } from './management-scope.js';

/**
 * DELETE /v1/environments/{id} — deletes an environment with its work items, worker polls
 * and environment keys. Sessions are never deleted from under the platform: an environment
 * that still has any is a 400.
 */
export function registerEnvironmentsDelete(app: Hono<AppEnv>): void {
  document({
    method: 'delete',
    path: ENVIRONMENT,
    summary: 'Delete an environment that has no sessions',
    credentials: ['admin_api_key'],
    responses: { 200: { description: 'the deleted id', schema: wireEnvironmentDeletedSchema } },
  });
  app.delete(ENVIRONMENT, async (c) => {
    await authorize(c, ADMIN);
    await drainBody(c);
    const id = environmentParam(c);
    const outcome = await deleteEnvironment(c.get('deps').db, id);
    if (outcome === 'not_found') throw environmentNotFound();
    if (outcome === 'has_sessions') {
      throw codedBadRequest(
        'the environment still has sessions; delete them first',
        'environment_has_sessions',
      );
    }
    c.get('credentials').forgetEnvironment(id);
    return reply(c, { id, type: 'environment_deleted' });
  });
}
