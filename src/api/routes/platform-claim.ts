import type { Hono } from 'hono';
import * as z from 'zod/mini';
import { pause } from '../../clock.js';
import { claim, type Item, type WorkKind } from '../../queue/index.js';
import { authorize, PLATFORM } from '../auth.js';
import { parseWith, readJson } from '../body.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { ApiDeps, AppEnv } from '../types.js';
import { kindSchema, PLATFORM_BASE, ttlSecondsSchema } from './platform-scope.js';
import { platformItemSchema, toPlatformItem } from './platform-wire.js';

/** A platform function's longest wait for work in one request; it asks again after. */
export const MAX_CLAIM_BLOCK_MS = 20_000;
/** Without a wake-up feed for the kind, the wait re-claims on a backoff from MIN to MAX. */
const RECLAIM_MIN_MS = 100;
const RECLAIM_MAX_MS = 1_000;

export const platformClaimBody = z.strictObject({
  kind: kindSchema,
  ttl_seconds: ttlSecondsSchema,
  block_ms: z
    .optional(z.int().check(z.gte(1), z.lte(MAX_CLAIM_BLOCK_MS)))
    .check(
      z.describe(`wait up to this long for an item (at most ${MAX_CLAIM_BLOCK_MS}); absent: answer at once`),
    ),
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
    const deps = c.get('deps');
    if (body.block_ms === undefined) return reply(c, toPlatform(await claim(deps.db, body.kind, ttlMs)));
    const release = c.get('pollGate').admit(caller.keyId);
    try {
      return reply(
        c,
        toPlatform(await waitAndClaim(deps, body.kind, ttlMs, body.block_ms, c.req.raw.signal)),
      );
    } finally {
      release();
    }
  });
}

const toPlatform = (item: Item | null) => item && toPlatformItem(item);

/** Claims until an item turns up, `blockMs` passes or the client goes away. */
async function waitAndClaim(
  deps: ApiDeps,
  kind: WorkKind,
  ttlMs: number,
  blockMs: number,
  signal: AbortSignal,
): Promise<Item | null> {
  // Watched before the first attempt, so an enqueue between it and the wait still wakes it.
  const watch = deps.claimWake?.watch(kind) ?? null;
  const deadline = performance.now() + blockMs;
  let backoff = RECLAIM_MIN_MS;
  try {
    let item = await claim(deps.db, kind, ttlMs);
    while (!item && !signal.aborted) {
      const remaining = deadline - performance.now();
      if (remaining <= 0) break;
      if (watch) await watch.wait(remaining, signal);
      else {
        await pause(Math.min(backoff, remaining), signal);
        backoff = Math.min(RECLAIM_MAX_MS, backoff * 2);
      }
      if (signal.aborted) break;
      item = await claim(deps.db, kind, ttlMs);
    }
    return item;
  } finally {
    watch?.close();
  }
}
