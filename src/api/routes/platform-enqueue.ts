import type { Hono } from 'hono';
import * as z from 'zod/mini';
import type { Database } from '../../db/handle.js';
import { isMintedId } from '../../ids.js';
import { type EnqueueInput, type EnqueueResult, enqueue, UnknownSessionError } from '../../queue/index.js';
import { bindSession } from '../../sessions/index.js';
import { traceContextFromHeaders } from '../../telemetry/trace-header.js';
import { authorize, PLATFORM } from '../auth.js';
import { parseWith, readJson } from '../body.js';
import { badRequest, notFound, temporarilyUnavailable } from '../errors.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { kindSchema, PLATFORM_BASE, sessionIdSchema } from './platform-scope.js';
import { platformWorkSchema, toPlatformWork } from './platform-wire.js';

/** Caps on an item's metadata: routing labels and ids travel here, payloads do not. */
export const MAX_METADATA_PAIRS = 16;
export const MAX_METADATA_KEY = 64;
export const MAX_METADATA_VALUE = 512;

export const platformEnqueueBody = z.strictObject({
  environment_id: z.string().check(z.describe('the environment the session is (or becomes) bound to')),
  session_id: sessionIdSchema,
  kind: kindSchema,
  metadata: z
    .optional(
      z
        .record(
          z.string().check(z.minLength(1), z.maxLength(MAX_METADATA_KEY)),
          z.string().check(z.maxLength(MAX_METADATA_VALUE)),
        )
        .check(
          z.refine((m) => Object.keys(m).length <= MAX_METADATA_PAIRS, `at most ${MAX_METADATA_PAIRS} pairs`),
        ),
    )
    .check(
      z.describe(`string → string, at most ${MAX_METADATA_PAIRS} pairs, keys ≤ 64, values ≤ 512 characters`),
    ),
});
const enqueued = (created: boolean) => z.object({ created: z.literal(created), work: platformWorkSchema });
export type PlatformEnqueueBody = z.infer<typeof platformEnqueueBody>;

/**
 * POST /v1/platform/work `{environment_id, session_id, kind, metadata?}` — queues an item,
 * binding the session to the environment on its first use. 201 `{created: true, work}` for a
 * new item; 200 `{created: false, work}` when a live item of the session and kind already
 * covers it (its metadata is left as it was). A valid W3C `traceparent` (and `tracestate`)
 * header becomes the item's trace context.
 */
export function registerPlatformEnqueue(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: `${PLATFORM_BASE}/work`,
    summary: 'Enqueue a work item for a session (idempotent on the live item)',
    credentials: ['platform_api_key', 'admin_api_key'],
    body: platformEnqueueBody,
    responses: {
      201: { description: 'a new item was queued', schema: enqueued(true) },
      200: { description: 'a live item of this session and kind already covers it', schema: enqueued(false) },
      400: { description: 'invalid body, or the session is bound to another environment' },
      404: { description: 'no such environment' },
      503: {
        description:
          'the session was deleted by retention and its old journal is being purged right now (retry-after)',
      },
    },
  });
  app.post(`${PLATFORM_BASE}/work`, async (c) => {
    await authorize(c, PLATFORM);
    const body = parseWith(platformEnqueueBody, await readJson(c));
    // Leasehold mints environment ids; anything else names no environment.
    if (!isMintedId(body.environment_id, 'env')) throw notFound('environment not found');
    const { created, work } = await bindAndEnqueue(c.get('deps').db, {
      environmentId: body.environment_id,
      sessionId: body.session_id,
      kind: body.kind,
      metadata: body.metadata,
      traceContext: traceContextFromHeaders(c.req.header('traceparent'), c.req.header('tracestate')),
    });
    return reply(c, { created, work: toPlatformWork(work) }, created ? 201 : 200);
  });
}

/**
 * Binding and enqueue are one statement (`bindSession`), so a refused or failed enqueue never
 * leaves the session bound to an environment that never got its work — a binding is for
 * life — and the common case costs one round trip. When that statement refuses the session
 * (no such environment, or bound elsewhere), the binding step alone says which, in a
 * transaction that rolls back whatever it did.
 */
export async function bindAndEnqueue(db: Database, input: EnqueueInput): Promise<EnqueueResult> {
  try {
    return await enqueue(db, { ...input, bindSession: true });
  } catch (err) {
    if (!(err instanceof UnknownSessionError)) throw err;
  }
  return db.transaction(async (tx) => {
    const binding = await bindSession(tx, input.sessionId, input.environmentId);
    if (binding.status === 'environment_missing') throw notFound('environment not found');
    if (binding.status === 'bound_elsewhere') {
      throw badRequest(`session ${input.sessionId} is bound to another environment`);
    }
    if (binding.status === 'purging') {
      throw temporarilyUnavailable(
        `session ${input.sessionId} was deleted and its journal is being purged; retry shortly`,
      );
    }
    return enqueue(tx, input);
  });
}
