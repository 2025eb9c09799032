import type { Hono } from 'hono';
import * as z from 'zod/mini';
import { authorize, PLATFORM } from '../auth.js';
import { parseWith, readJson } from '../body.js';
import { document, errorEnvelope } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { blockMsSchema, claimForRequest } from './platform-claim-wait.js';
import {
  heldItem,
  kindSchema,
  leaseSchema,
  PLATFORM_BASE,
  platformWorkId,
  ttlSecondsSchema,
} from './platform-scope.js';
import { platformItemSchema } from './platform-wire.js';
import { workCalls } from './work-scope.js';

export const platformCompleteAndClaimBody = z.strictObject({
  lease: leaseSchema,
  kind: kindSchema,
  ttl_seconds: ttlSecondsSchema,
  block_ms: blockMsSchema,
});
export type PlatformCompleteAndClaimBody = z.infer<typeof platformCompleteAndClaimBody>;

/**
 * POST /v1/platform/work/{id}/complete_and_claim `{lease, kind, ttl_seconds, block_ms?}` — a
 * claimer's loop step in one request and one statement: completes the held item under its
 * proof, exactly as `complete` does, then leases the oldest available item of `kind`, exactly
 * as `claim` does, and answers it (200, or 200 `null` on an empty lane).
 *
 * A proof that is not the current one is 409 `lease_lost_error`, as from `complete`, and
 * claims nothing: the caller learns its lease was lost and holds no new one. With `block_ms`
 * an empty lane is waited on as `claim` waits — the completion has already committed by then,
 * so a client that goes away mid-wait has still finished its item. A long wait over the caps
 * is a 429 before anything is done, so the retry carries the same proof.
 */
export function registerPlatformCompleteAndClaim(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: `${PLATFORM_BASE}/work/:workId/complete_and_claim`,
    summary: 'Complete a claimed item (fenced by the lease proof) and claim the next of a kind',
    credentials: ['platform_api_key', 'admin_api_key'],
    body: platformCompleteAndClaimBody,
    responses: {
      200: {
        description: 'the held item is finished; the next claimed item, or null',
        schema: z.nullable(platformItemSchema),
      },
      409: { description: 'lease_lost_error: nothing was completed or claimed', schema: errorEnvelope },
      429: {
        description: 'too many waits in flight: nothing was completed or claimed',
        schema: errorEnvelope,
      },
    },
  });
  app.post(`${PLATFORM_BASE}/work/:workId/complete_and_claim`, async (c) => {
    const caller = await authorize(c, PLATFORM);
    const body = parseWith(platformCompleteAndClaimBody, await readJson(c));
    const held = heldItem(platformWorkId(c), body.lease);
    const ttlMs = body.ttl_seconds * 1000;
    // A wait is admitted before the step runs, so a refusal (429) leaves the held item as it was.
    const step = () => workCalls(c).completeThenClaim({ held, kind: body.kind, ttlMs });
    return reply(c, await claimForRequest(c, caller.keyId, body.kind, ttlMs, body.block_ms, step));
  });
}
