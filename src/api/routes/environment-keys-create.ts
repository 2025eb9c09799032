import type { Hono } from 'hono';
import { issueEnvironmentKey } from '../../auth/credentials.js';
import { PG_FOREIGN_KEY_VIOLATION, pgCode } from '../../db/errors.js';
import { getEnvironment } from '../../environments/index.js';
import { ADMIN, authorize } from '../auth.js';
import { parseWith, readJson } from '../body.js';
import { badRequest } from '../errors.js';
import { document, errorEnvelope } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import {
  environmentKeyBody,
  toWireIssuedEnvironmentKey,
  wireIssuedEnvironmentKeySchema,
} from './key-wire.js';
import {
  codedBadRequest,
  ENVIRONMENT_KEYS,
  environmentNotFound,
  environmentParam,
  NO_STORE,
} from './management-scope.js';

/**
 * POST /v1/environments/{id}/keys `{name, expires_in_seconds?}` — issues an environment key
 * for a self_hosted environment's workers. The secret is in this answer only (201,
 * `Cache-Control: no-store`). A cloud environment has no workers to key — nothing polls it,
 * so a key would only be a credential with nothing to open — and an archived one takes no new
 * keys: both 400.
 */
export function registerEnvironmentKeysCreate(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: ENVIRONMENT_KEYS,
    summary: 'Issue an environment key (the secret is shown once)',
    credentials: ['admin_api_key'],
    body: environmentKeyBody,
    responses: {
      201: { description: 'the key, with its secret', schema: wireIssuedEnvironmentKeySchema },
      400: {
        description:
          'invalid_request_error: the environment is cloud (its tools run on the platform, no worker of its own polls it) or archived (error.code environment_archived)',
        schema: errorEnvelope,
      },
    },
  });
  app.post(ENVIRONMENT_KEYS, async (c) => {
    await authorize(c, ADMIN);
    const id = environmentParam(c);
    const body = parseWith(environmentKeyBody, await readJson(c));
    const { db } = c.get('deps');
    const environment = await getEnvironment(db, id);
    if (!environment) throw environmentNotFound();
    if (environment.kind !== 'self_hosted')
      throw badRequest('environment keys are issued only for self_hosted environments');
    if (environment.archivedAt !== null)
      throw codedBadRequest('the environment is archived and takes no new keys', 'environment_archived');
    try {
      const issued = await issueEnvironmentKey(db, id, body.name, body.expires_in_seconds ?? null);
      return reply(c, toWireIssuedEnvironmentKey(issued), 201, NO_STORE);
    } catch (err) {
      // Deleted between the check and the insert.
      if (pgCode(err) === PG_FOREIGN_KEY_VIOLATION) throw environmentNotFound();
      throw err;
    }
  });
}
