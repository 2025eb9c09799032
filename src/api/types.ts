import type { JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { ConfiguredAdminKey } from '../auth/configured-admin-key.js';
import type { CredentialCache } from '../auth/credential-cache.js';
import type { Principal } from '../auth/credentials.js';
import type { Database } from '../db/handle.js';
import type { WorkCalls } from '../queue/index.js';
import type { IdlePolls } from './idle-polls.js';
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
  /**
   * How the work API's polls, acks, heartbeats and stops, and the platform lane's
   * complete-and-claim steps, reach `db`: a long-lived host passes
   * `wireFolds(db)`, which folds concurrent calls into shared statements; absent → a
   * statement per call (Workers: the handle lives for one request, nothing to fold).
   */
  workCalls?: WorkCalls;
  /** Wakes long polls when work arrives; absent → waiters re-poll on a short backoff. */
  wake?: WakeSource;
  /**
   * Wakes a session's event streams when its log grows (keyed by session id); absent → a
   * stream re-reads the log's head on a short backoff and closes after a bounded lifetime.
   */
  sessionWake?: WakeSource;
  /**
   * How long an event stream lives before it closes cleanly (Workers: a request should not
   * live for ever; the SDK reconnects). Absent → for ever with `sessionWake`, 5 minutes
   * without.
   */
  streamLifetimeMs?: number;
  /**
   * Wakes the platform lane's waiting claims (keyed by work kind) when work of that kind is
   * enqueued; absent for a kind → a waiting claim re-claims on a growing backoff.
   */
  claimWake?: WakeSource;
  /**
   * Called after a request that may have enqueued a session's turn, for a host whose brain
   * must be started rather than woken (Workers: the brain Worker, through a service binding).
   * On Node the brain wakes on NOTIFY and this is unset.
   */
  turnEnqueued?: () => void;
  log?: Logger;
  /**
   * The agent journal's NATS connection (NATS_URL), asked for by a request only when it reads
   * the journal: a long-lived host hands back the connection it opened at start; a host whose
   * connections cannot outlive a request (Workers) opens one then (`request-journal.ts`).
   * Absent → the journal routes answer 503.
   */
  journal?: () => Promise<JournalDeps>;
  /**
   * LEASEHOLD_ADMIN_KEY for a host with no start-up to ensure it at (Workers): the app makes
   * it a live admin key before the first credential it resolves. The Node server ensures it
   * at start (or generates a key) and leaves this unset.
   */
  adminKey?: string;
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
    /** Whether this app has ensured `deps.adminKey` (one per process or Worker isolate). */
    configuredAdminKey: ConfiguredAdminKey;
    /** When this app last wrote each worker's poll row. */
    pollRecords: PollRecords;
    /** Which environments' last long poll here found nothing at first (one per process or isolate). */
    idlePolls: IdlePolls;
    /** This app's count of parked long polls, per key and in all (one per process or isolate). */
    pollGate: PollGate;
  };
};
