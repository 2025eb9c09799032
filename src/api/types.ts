import type { Principal } from '../auth/credentials.js';
import type { Database } from '../db/handle.js';
import type { WakeSource } from './wake.js';

export interface Logger {
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** What the API needs from its host; built by the entry points in `functions/`. */
export interface ApiDeps {
  db: Database;
  /** Wakes long polls when work arrives; absent → waiters re-poll on a short backoff. */
  wake?: WakeSource;
  log?: Logger;
}

export type AppEnv = {
  Variables: { deps: ApiDeps; requestId: string; principal: Principal | undefined };
};
