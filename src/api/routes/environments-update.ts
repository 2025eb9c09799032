import type { Hono } from 'hono';
import { MAX_METADATA_PAIRS, type UpdateOutcome, updateEnvironment } from '../../environments/index.js';
import { ADMIN, authorize } from '../auth.js';
import { parseWith, readJson } from '../body.js';
import type { ApiError } from '../errors.js';
import { document, errorEnvelope } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { checkedMetadata, invalidMetadata, updateEnvironmentBody } from './environment-body.js';
import { toWireEnvironment, wireEnvironmentSchema } from './environment-wire.js';
import { codedBadRequest, ENVIRONMENT, environmentNotFound, environmentParam } from './management-scope.js';

/**
 * POST /v1/environments/{id} — a partial update: omitted fields keep their value,
 * `description: null` clears it, a metadata value of null or "" deletes its key. An archived
 * environment, a change of `config.type` and a metadata overflow are 400s with the SDK's
 * error codes. An empty body is an empty patch.
 */
export function registerEnvironmentsUpdate(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: ENVIRONMENT,
    summary: 'Update an environment',
    credentials: ['admin_api_key'],
    body: updateEnvironmentBody,
    responses: {
      200: { description: 'the environment', schema: wireEnvironmentSchema },
      400: {
        description: 'environment_archived, invalid_config_type_change or invalid_metadata',
        schema: errorEnvelope,
      },
    },
  });
  app.post(ENVIRONMENT, async (c) => {
    await authorize(c, ADMIN);
    const id = environmentParam(c);
    const body = parseWith(updateEnvironmentBody, (await readJson(c)) ?? {});
    const outcome = await updateEnvironment(c.get('deps').db, id, {
      name: body.name ?? undefined,
      description: body.description,
      metadata: checkedMetadata(body.metadata),
      config: body.config ?? undefined,
    });
    if (!outcome.ok) throw refusal(outcome.reason);
    return reply(c, toWireEnvironment(outcome.environment));
  });
}

function refusal(reason: Extract<UpdateOutcome, { ok: false }>['reason']): ApiError {
  switch (reason) {
    case 'not_found':
      return environmentNotFound();
    case 'archived':
      return codedBadRequest('the environment is archived and cannot be updated', 'environment_archived');
    case 'config_type_change':
      return codedBadRequest(
        "config.type cannot change after the environment's creation",
        'invalid_config_type_change',
      );
    case 'too_many_metadata_keys':
      return invalidMetadata(`metadata would have more than ${MAX_METADATA_PAIRS} keys after this update`);
  }
}
