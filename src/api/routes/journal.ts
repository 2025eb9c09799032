/**
 * The agent journal's read side on the platform lane: a step's records in pages, and a run's
 * invariant check. Both only read the AGENT_JOURNAL stream; the writers are the workers.
 */
import type { Hono } from 'hono';
import type { AppEnv } from '../types.js';
import { registerJournalCheck } from './journal-check.js';
import { registerJournalRead } from './journal-read.js';

export function registerJournalRoutes(app: Hono<AppEnv>): void {
  registerJournalRead(app);
  registerJournalCheck(app);
}
