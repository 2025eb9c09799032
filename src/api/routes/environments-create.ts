import type { Hono } from 'hono';
import { applyMetadataPatch, createEnvironment, resolveConfig } from '../../environments/index.js';
import { ADMIN, authorize } from '../auth.js';
import { parseWith, readJson } from '../body.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { checkedMetadata, createEnvironmentBody } from './environment-body.js';
import { toWireEnvironment, wireEnvironmentSchema } from './environment-wire.js';
import { ENVIRONMENTS } from './management-scope.js';

/**
 * POST /v1/environments — creates an environment; without a config it is cloud with
 * unrestricted networking and no packages. Answers 200 with the environment, as the
 * official API does for creates.
 */
export function registerEnvironmentsCreate(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: ENVIRONMENTS,
    summary: 'Create an environment',
    credentials: ['admin_api_key'],
    body: createEnvironmentBody,
    responses: { 200: { description: 'the environment', schema: wireEnvironmentSchema } },
  });
  app.post(ENVIRONMENTS, async (c) => {
    await authorize(c, ADMIN);
    const body = parseWith(createEnvironmentBody, await readJson(c));
    const environment = await createEnvironment(c.get('deps').db, {
      name: body.name,
      description: body.description ?? null,
      // "" means "no such key" here as on update, so it is dropped rather than stored.
      metadata: applyMetadataPatch({}, checkedMetadata(body.metadata)),
      config: resolveConfig(body.config),
    });
    return reply(c, toWireEnvironment(environment));
  });
}
