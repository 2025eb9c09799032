import type { Hono } from 'hono';
import * as z from 'zod/mini';
import { getEnvironment } from '../../environments/index.js';
import { enqueueHealthcheck } from '../../queue/index.js';
import { traceContextFromHeaders } from '../../telemetry/trace-header.js';
import { authorize, PLATFORM } from '../auth.js';
import { parseWith, readJson } from '../body.js';
import { badRequest } from '../errors.js';
import { document, errorEnvelope } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { toWireWork, wireWorkSchema } from '../wire.js';
import { codedBadRequest, environmentNotFound, environmentParam } from './management-scope.js';
import { PLATFORM_BASE } from './platform-scope.js';

export const PLATFORM_HEALTHCHECKS = `${PLATFORM_BASE}/environments/:environmentId/healthchecks`;

/** No options yet; an empty body or `{}`, so a field sent in hope is refused, not ignored. */
export const platformHealthcheckBody = z.optional(z.strictObject({}));

const healthcheckWorkSchema = z.extend(wireWorkSchema, {
  data: z.object({
    type: z.literal('healthcheck'),
    id: z.string().check(z.describe('the healthcheck’s own id (hc_…)')),
  }),
});
const asked = (created: boolean) => z.object({ created: z.literal(created), work: healthcheckWorkSchema });

/**
 * POST /v1/platform/environments/{environment_id}/healthchecks — queues a healthcheck for the
 * environment's workers: a poll-lane work item whose `data` is `{type: "healthcheck", id}`,
 * bound to no session. A worker polls, acks and stops it like any item (the SDK's worker
 * acks it and force-stops it without running anything), and the console shows when it was
 * last answered. 201 `{created: true, work}`; 200 `{created: false, work}` with the live
 * healthcheck while one is queued, starting or active (one per environment at a time).
 *
 * Only a self_hosted environment has workers of its own to answer: a cloud one is a 400. An
 * archived one takes no new healthchecks, as it takes no new keys or sessions (400
 * `environment_archived`). An incoming `traceparent` becomes the item's trace context, as on
 * the platform lane's enqueue.
 */
export function registerPlatformHealthchecks(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: PLATFORM_HEALTHCHECKS,
    summary: 'Queue a healthcheck for a self_hosted environment’s workers (idempotent on the live one)',
    credentials: ['platform_api_key', 'admin_api_key'],
    // No `body`: the document can only mark a body required, and this one is optional (empty or {}).
    responses: {
      201: { description: 'a new healthcheck was queued on the poll lane', schema: asked(true) },
      200: { description: 'the environment’s live healthcheck already covers it', schema: asked(false) },
      400: {
        description:
          'invalid_request_error: the environment is cloud (no worker of its own polls it) or archived (error.details.error_code environment_archived), or the body is not empty or {}',
        schema: errorEnvelope,
      },
      404: { description: 'no such environment', schema: errorEnvelope },
    },
  });
  app.post(PLATFORM_HEALTHCHECKS, async (c) => {
    await authorize(c, PLATFORM);
    const id = environmentParam(c);
    parseWith(platformHealthcheckBody, await readJson(c));
    const { db } = c.get('deps');
    const environment = await getEnvironment(db, id);
    if (!environment) throw environmentNotFound();
    if (environment.kind !== 'self_hosted')
      throw badRequest(
        'healthchecks are for self_hosted environments: a cloud environment has no workers of its own to answer one',
      );
    if (environment.archivedAt !== null)
      throw codedBadRequest(
        'the environment is archived and takes no new healthchecks',
        'environment_archived',
      );
    const result = await enqueueHealthcheck(db, {
      environmentId: id,
      traceContext: traceContextFromHeaders(c.req.header('traceparent'), c.req.header('tracestate')),
    });
    // Deleted between the read and the insert.
    if (!result) throw environmentNotFound();
    return reply(c, { created: result.created, work: toWireWork(result.work) }, result.created ? 201 : 200);
  });
}
