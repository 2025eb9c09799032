import type { Hono } from 'hono';
import { z } from 'zod';
import { claim } from '../../queue/index.js';
import { authorize, PLATFORM } from '../auth.js';
import { parseWith, readJson } from '../body.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { kindSchema, PLATFORM_BASE, ttlSecondsSchema } from './platform-scope.js';
import { platformItemSchema, toPlatformItem } from './platform-wire.js';

export const platformClaimBody = z.strictObject({ kind: kindSchema, ttl_seconds: ttlSecondsSchema });
export type PlatformClaimBody = z.infer<typeof platformClaimBody>;

/**
 * POST /v1/platform/work/claim `{kind, ttl_seconds}` — leases the oldest available item of
 * `kind` on the claim lane, or answers 200 `null` on an empty lane (as an empty poll does).
 * A self_hosted environment's tool_exec items are never here: workers poll them.
 */
export function registerPlatformClaim(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: `${PLATFORM_BASE}/work/claim`,
    summary: 'Claim the oldest available item of a kind under a lease',
    credentials: ['platform_api_key', 'admin_api_key'],
    body: platformClaimBody,
    responses: { 200: { description: 'the claimed item, or null', schema: platformItemSchema.nullable() } },
  });
  app.post(`${PLATFORM_BASE}/work/claim`, async (c) => {
    await authorize(c, PLATFORM);
    const body = parseWith(platformClaimBody, await readJson(c));
    const item = await claim(c.get('deps').db, body.kind, body.ttl_seconds * 1000);
    return reply(c, item && toPlatformItem(item));
  });
}
