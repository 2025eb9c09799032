import type { Hono } from 'hono';
import * as z from 'zod/mini';
import { authorize, PLATFORM } from '../auth.js';
import { parseWith, readJson } from '../body.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { blockMsSchema, claimForRequest } from './platform-claim-wait.js';
import { kindSchema, PLATFORM_BASE, ttlSecondsSchema } from './platform-scope.js';
import { platformItemSchema } from './platform-wire.js';
import { workCalls } from './work-scope.js';

export const platformClaimBody = z.strictObject({
  kind: kindSchema,
  ttl_seconds: ttlSecondsSchema,
  block_ms: blockMsSchema,
});
export type PlatformClaimBody = z.infer<typeof platformClaimBody>;

/**
 * POST /v1/platform/work/claim `{kind, ttl_seconds, block_ms?}` — leases the oldest available
 * item of `kind` on the claim lane, or answers 200 `null` on an empty lane (as an empty poll
 * does). With `block_ms` it waits that long for one first, holding no connection while it
 * waits: on Node a session's new `model_turn` wakes it at once (NOTIFY); other kinds, and
 * Workers, re-claim on a growing backoff. Long waits share the long polls' caps (429).
 * A self_hosted environment's tool_exec items are never here: workers poll them.
 */
export function registerPlatformClaim(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: `${PLATFORM_BASE}/work/claim`,
    summary: 'Claim the oldest available item of a kind under a lease (optionally waiting for one)',
    credentials: ['platform_api_key', 'admin_api_key'],
    body: platformClaimBody,
    responses: { 200: { description: 'the claimed item, or null', schema: z.nullable(platformItemSchema) } },
  });
  app.post(`${PLATFORM_BASE}/work/claim`, async (c) => {
    const caller = await authorize(c, PLATFORM);
    const body = parseWith(platformClaimBody, await readJson(c));
    const ttlMs = body.ttl_seconds * 1000;
    const first = () => workCalls(c).claim({ kind: body.kind, ttlMs });
    return reply(c, await claimForRequest(c, caller.keyId, body.kind, ttlMs, body.block_ms, first));
  });
}
