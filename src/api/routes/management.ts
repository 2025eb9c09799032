/**
 * The management API (admin API keys): environments, environment keys and API keys.
 * Registers one endpoint per file; see the files imported below.
 */
import type { Hono } from 'hono';
import type { AppEnv } from '../types.js';

export function registerManagement(_app: Hono<AppEnv>): void {}
