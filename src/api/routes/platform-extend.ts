import type { Hono } from 'hono';
import * as z from 'zod/mini';
import { extend } from '../../queue/index.js';
import { authorize, PLATFORM } from '../auth.js';
import { parseWith, readJson } from '../body.js';
import { document, errorEnvelope } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { heldItem, leaseSchema, PLATFORM_BASE, platformWorkId, ttlSecondsSchema } from './platform-scope.js';

export const platformExtendBody = z.strictObject({ lease: leaseSchema, ttl_seconds: ttlSecondsSchema });
export type PlatformExtendBody = z.infer<typeof platformExtendBody>;

/**
 * POST /v1/platform/work/{id}/extend `{lease, ttl_seconds}` — renews the lease to ttl from
 * now and answers the new proof; the old one stops working. 409 `lease_lost_error` when the
 * proof is not the current one (reclaimed, finished, cancelled, or never issued).
 */
export function registerPlatformExtend(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: `${PLATFORM_BASE}/work/:workId/extend`,
    summary: 'Extend a claimed item’s lease (fenced by the lease proof)',
    credentials: ['platform_api_key', 'admin_api_key'],
    body: platformExtendBody,
    responses: {
      200: { description: 'the new lease proof', schema: z.object({ lease: leaseSchema }) },
      409: { description: 'lease_lost_error', schema: errorEnvelope },
    },
  });
  app.post(`${PLATFORM_BASE}/work/:workId/extend`, async (c) => {
    await authorize(c, PLATFORM);
    const body = parseWith(platformExtendBody, await readJson(c));
    const item = heldItem(platformWorkId(c), body.lease);
    return reply(c, { lease: await extend(c.get('deps').db, item, body.ttl_seconds * 1000) });
  });
}
