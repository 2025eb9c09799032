import type { Hono } from 'hono';
import * as z from 'zod/mini';
import { authorize, PLATFORM } from '../auth.js';
import { parseWith, readJson } from '../body.js';
import { document, errorEnvelope } from '../openapi.js';
import { noContent } from '../reply.js';
import type { AppEnv } from '../types.js';
import { heldItem, leaseSchema, PLATFORM_BASE, platformWorkId } from './platform-scope.js';
import { workCalls } from './work-scope.js';

export const platformCompleteBody = z.strictObject({ lease: leaseSchema });
export type PlatformCompleteBody = z.infer<typeof platformCompleteBody>;

/**
 * POST /v1/platform/work/{id}/complete `{lease}` — marks the item finished (stopped).
 * Exactly one completion per item is accepted: any later write with any proof is a 409.
 * 204 with no body; 409 `lease_lost_error` when the proof is not the current one.
 */
export function registerPlatformComplete(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: `${PLATFORM_BASE}/work/:workId/complete`,
    summary: 'Complete a claimed item (fenced by the lease proof)',
    credentials: ['platform_api_key', 'admin_api_key'],
    body: platformCompleteBody,
    responses: {
      204: { description: 'finished; no body' },
      409: { description: 'lease_lost_error', schema: errorEnvelope },
    },
  });
  app.post(`${PLATFORM_BASE}/work/:workId/complete`, async (c) => {
    await authorize(c, PLATFORM);
    const body = parseWith(platformCompleteBody, await readJson(c));
    await workCalls(c).complete(heldItem(platformWorkId(c), body.lease));
    return noContent(c);
  });
}
