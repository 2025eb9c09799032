import type { JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { CredentialCache } from '../auth/credential-cache.js';
import type { Principal } from '../auth/credentials.js';
import type { Database } from '../db/handle.js';
import type { PollGate } from './poll-gate.js';
import type { PollRecords } from './poll-record.js';
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
  /** The agent journal's NATS connection (NATS_URL); absent → the journal routes answer 503. */
  journal?: JournalDeps;
}

/** A JetStream client and the connection under it (Check takes the connection, as Go's does). */
export interface JournalDeps {
  js: JetStreamClient;
  nc: NatsConnection;
}

export type AppEnv = {
  Variables: {
    deps: ApiDeps;
    requestId: string;
    principal: Principal | undefined;
    /** This app's memory of resolved credentials (one per process or Worker isolate). */
    credentials: CredentialCache;
    /** When this app last wrote each worker's poll row. */
    pollRecords: PollRecords;
    /** This app's count of parked long polls, per key and in all (one per process or isolate). */
    pollGate: PollGate;
  };
};
