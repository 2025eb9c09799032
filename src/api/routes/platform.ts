/**
 * The platform lane (platform or admin API keys; an environment key is a 401): enqueue,
 * claim, extend, complete, complete-and-claim, requeue, session cancel and environment
 * healthchecks over HTTP, for platform functions that run and settle work. One endpoint per
 * file, registered here; `claim` is a literal segment and the per-item routes all carry a
 * suffix, so no route shadows another.
 */
import type { Hono } from 'hono';
import type { AppEnv } from '../types.js';
import { registerPlatformCancelSession } from './platform-cancel-session.js';
import { registerPlatformClaim } from './platform-claim.js';
import { registerPlatformComplete } from './platform-complete.js';
import { registerPlatformCompleteAndClaim } from './platform-complete-and-claim.js';
import { registerPlatformEnqueue } from './platform-enqueue.js';
import { registerPlatformExtend } from './platform-extend.js';
import { registerPlatformFallbacks } from './platform-fallbacks.js';
import { registerPlatformHealthchecks } from './platform-healthchecks.js';
import { registerPlatformRequeue } from './platform-requeue.js';

export function registerPlatform(app: Hono<AppEnv>): void {
  registerPlatformEnqueue(app);
  registerPlatformClaim(app);
  registerPlatformExtend(app);
  registerPlatformComplete(app);
  registerPlatformCompleteAndClaim(app);
  registerPlatformRequeue(app);
  registerPlatformCancelSession(app);
  registerPlatformHealthchecks(app);
  registerPlatformFallbacks(app);
}
