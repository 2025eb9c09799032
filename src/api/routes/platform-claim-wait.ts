/**
 * The platform lane's wait for work (`block_ms`), shared by claim and complete-and-claim: how
 * long a request may wait, and the loop that re-claims until an item turns up.
 */
import type { Context } from 'hono';
import * as z from 'zod/mini';
import { pause } from '../../clock.js';
import type { Item, WorkKind } from '../../queue/index.js';
import type { ApiDeps, AppEnv } from '../types.js';
import { type PlatformItem, toPlatformItem } from './platform-wire.js';
import { hostCalls } from './work-scope.js';

/** A platform function's longest wait for work in one request; it asks again after. */
export const MAX_CLAIM_BLOCK_MS = 20_000;
/** Without a wake-up feed for the kind, the wait re-claims on a backoff from MIN to MAX. */
const RECLAIM_MIN_MS = 100;
const RECLAIM_MAX_MS = 1_000;

export const blockMsSchema = z
  .optional(z.int().check(z.gte(1), z.lte(MAX_CLAIM_BLOCK_MS)))
  .check(
    z.describe(`wait up to this long for an item (at most ${MAX_CLAIM_BLOCK_MS}); absent: answer at once`),
  );

/**
 * A request's claim, as the platform item it answers (or null): `first` at once without
 * `blockMs`; with it, admitted by the long-poll gate first (a 429 there has done nothing, so a
 * retry may carry the same proof) and waited on by `waitAndClaim`.
 */
export async function claimForRequest(
  c: Context<AppEnv>,
  keyId: string,
  kind: WorkKind,
  ttlMs: number,
  blockMs: number | undefined,
  first: () => Promise<Item | null>,
): Promise<PlatformItem | null> {
  if (blockMs === undefined) return platformOrNull(await first());
  const release = c.get('pollGate').admit(keyId);
  try {
    return platformOrNull(await waitAndClaim(c.get('deps'), kind, ttlMs, blockMs, c.req.raw.signal, first));
  } finally {
    release();
  }
}

const platformOrNull = (item: Item | null) => item && toPlatformItem(item);

/**
 * Runs `first` (a claim, or whatever statement claims on the request's behalf), then claims
 * until an item turns up, `blockMs` passes or the client goes away.
 */
export async function waitAndClaim(
  deps: ApiDeps,
  kind: WorkKind,
  ttlMs: number,
  blockMs: number,
  signal: AbortSignal,
  first: () => Promise<Item | null>,
): Promise<Item | null> {
  // Watched before the first attempt, so an enqueue between it and the wait still wakes it.
  const watch = deps.claimWake?.watch(kind) ?? null;
  const deadline = performance.now() + blockMs;
  let backoff = RECLAIM_MIN_MS;
  try {
    let item = await first();
    while (!item && !signal.aborted) {
      const remaining = deadline - performance.now();
      if (remaining <= 0) break;
      if (watch) await watch.wait(remaining, signal);
      else {
        await pause(Math.min(backoff, remaining), signal);
        backoff = Math.min(RECLAIM_MAX_MS, backoff * 2);
      }
      if (signal.aborted) break;
      item = await hostCalls(deps).claim({ kind, ttlMs });
    }
    return item;
  } finally {
    watch?.close();
  }
}
