/**
 * The platform lane (platform or admin API keys): enqueue, claim, extend, complete, requeue
 * and session cancel over HTTP, for platform functions that settle work.
 */
import type { Hono } from 'hono';
import type { AppEnv } from '../types.js';

export function registerPlatform(_app: Hono<AppEnv>): void {}
