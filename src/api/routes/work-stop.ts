import type { Hono } from 'hono';
import * as z from 'zod/mini';
import { rearm, rearmFor } from '../../loop/index.js';
import { ANY_KEY, authorize } from '../auth.js';
import { readJson } from '../body.js';
import { badRequest } from '../errors.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { toWireWork, wireWorkSchema } from '../wire.js';
import { environmentId, WORK_BASE, workCalls, workId } from './work-scope.js';

/**
 * POST /work/{id}/stop `{force?}` — graceful by default (an active item winds down through
 * `stopping`; a queued or starting one stops outright), `force` stops at once. Answers 200
 * with the item as it stands after the stop — the SDK types `work.stop()` as the work object,
 * as it does ack and get; 409 when the item is already past the requested transition.
 * Accepts the environment key (workers force-stop their own items) and API keys.
 */
export function registerWorkStop(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: `${WORK_BASE}/:workId/stop`,
    summary: 'Stop a work item (graceful, or force)',
    credentials: ['environment_key', 'admin_api_key', 'platform_api_key'],
    body: z.object({ force: z.optional(z.boolean()) }),
    responses: {
      200: {
        description: 'the work item after the stop: stopping (graceful, active) or stopped',
        schema: wireWorkSchema,
      },
      409: { description: 'already past it' },
    },
  });
  app.post(`${WORK_BASE}/:workId/stop`, async (c) => {
    const env = environmentId(c);
    await authorize(c, ANY_KEY, env);
    const id = workId(c);
    const force = parseStopBody(await readJson(c));
    const { db } = c.get('deps');
    const { work, callsOpen } = await workCalls(c).stop({ environmentId: env, workId: id, force });
    // A session's calls still open when its tool_exec item stops need a fresh item.
    if (
      callsOpen &&
      work.sessionId &&
      rearmFor(work) === 'ended' &&
      (await rearm(db, work.sessionId, 'ended')).failed > 0
    ) {
      c.get('deps').turnEnqueued?.();
    }
    return reply(c, toWireWork(work));
  });
}

/** Lenient like the reference: empty, `null` and `{}` are graceful; unknown fields are ignored. */
function parseStopBody(body: unknown): boolean {
  if (body === undefined || body === null) return false;
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw badRequest('invalid stop request body: expected a JSON object');
  }
  const force = (body as { force?: unknown }).force;
  if (force === undefined || force === null) return false;
  if (typeof force !== 'boolean') throw badRequest('invalid stop request body: force must be a boolean');
  return force;
}
