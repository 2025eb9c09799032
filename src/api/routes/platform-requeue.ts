import type { Hono } from 'hono';
import * as z from 'zod/mini';
import { requeue } from '../../queue/index.js';
import { authorize, PLATFORM } from '../auth.js';
import { parseWith, readJson } from '../body.js';
import { document, errorEnvelope } from '../openapi.js';
import { noContent } from '../reply.js';
import type { AppEnv } from '../types.js';
import { heldItem, leaseSchema, PLATFORM_BASE, platformWorkId } from './platform-scope.js';

export const platformRequeueBody = z.strictObject({ lease: leaseSchema });
export type PlatformRequeueBody = z.infer<typeof platformRequeueBody>;

/**
 * POST /v1/platform/work/{id}/requeue `{lease}` — hands the item back to the queue
 * under the same id (its next claim is not flagged reclaimed): the holder found follow-on work
 * for the session that the live slot would otherwise suppress.
 * 204 with no body; 409 `lease_lost_error` when the proof is not the current one.
 */
export function registerPlatformRequeue(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: `${PLATFORM_BASE}/work/:workId/requeue`,
    summary: 'Hand a claimed item back to the queue (fenced by the lease proof)',
    credentials: ['platform_api_key', 'admin_api_key'],
    body: platformRequeueBody,
    responses: {
      204: { description: 'queued again; no body' },
      409: { description: 'lease_lost_error', schema: errorEnvelope },
    },
  });
  app.post(`${PLATFORM_BASE}/work/:workId/requeue`, async (c) => {
    await authorize(c, PLATFORM);
    const body = parseWith(platformRequeueBody, await readJson(c));
    await requeue(c.get('deps').db, heldItem(platformWorkId(c), body.lease));
    return noContent(c);
  });
}
