import type { Hono } from 'hono';
import * as z from 'zod/mini';
import { HeartbeatMismatchError } from '../../queue/index.js';
import { authorize, ENVIRONMENT_KEY } from '../auth.js';
import { drainBody } from '../body.js';
import { badRequest, preconditionFailed } from '../errors.js';
import { document, errorEnvelope } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { toWireHeartbeat, wireHeartbeatSchema } from '../wire.js';
import { environmentId, lenientInt, queryParam, WORK_BASE, workCalls, workId } from './work-scope.js';

/** The heartbeat lease a worker gets unless it asks otherwise, and the most it can ask for. */
export const DEFAULT_TTL_SECONDS = 30;
export const MAX_TTL_SECONDS = 300;

/**
 * POST /work/{id}/heartbeat?expected_last_heartbeat=…&desired_ttl_seconds=… — the optimistic
 * concurrency heartbeat. A failed precondition is a 412 whose `error.details` carry
 * `error_code: heartbeat_precondition_failed` and the server's `current_state`.
 */
export function registerWorkHeartbeat(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: `${WORK_BASE}/:workId/heartbeat`,
    summary: 'Heartbeat: claim (NO_HEARTBEAT) or extend the lease',
    credentials: ['environment_key'],
    query: {
      expected_last_heartbeat: {
        schema: z.string(),
        description: 'NO_HEARTBEAT, or the last_heartbeat the server returned last',
        required: true,
      },
      desired_ttl_seconds: { schema: z.int(), description: 'lease length, default 30, max 300' },
    },
    responses: {
      200: { description: 'the heartbeat result', schema: wireHeartbeatSchema },
      412: { description: 'heartbeat_precondition_failed', schema: errorEnvelope },
    },
  });
  app.post(`${WORK_BASE}/:workId/heartbeat`, async (c) => {
    const env = environmentId(c);
    await authorize(c, ENVIRONMENT_KEY, env);
    await drainBody(c);
    const id = workId(c);
    const expected = queryParam(c, 'expected_last_heartbeat');
    if (expected === undefined) throw badRequest('expected_last_heartbeat is required');
    const ttl = lenientInt(queryParam(c, 'desired_ttl_seconds'), DEFAULT_TTL_SECONDS, MAX_TTL_SECONDS);
    try {
      const call = { environmentId: env, workId: id, expected, ttlSeconds: ttl };
      return reply(c, toWireHeartbeat(await workCalls(c).heartbeat(call)));
    } catch (err) {
      if (err instanceof HeartbeatMismatchError) throw preconditionFailed(err, ttl);
      throw err;
    }
  });
}
