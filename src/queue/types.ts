/**
 * The work queue: one `work_items` table that many claimants share over Postgres
 * (`FOR UPDATE SKIP LOCKED`) without ever handing one item to two holders at once.
 *
 * Terminology — each operation lives in a file named for it:
 *
 * - **item**: one unit of work for a session, of one kind. `enqueue` creates it `queued`.
 * - **healthcheck**: an item for no session — a probe that the environment's workers poll,
 *   ack and stop like any poll-lane item (`enqueueHealthcheck`; at most one live per
 *   environment). Its `data_type` is `healthcheck` and it carries its own id instead.
 * - **live slot**: at most one queued/starting/active item per (session, kind). `enqueue` is
 *   idempotent on it: a second enqueue while one is live returns the live one.
 * - **lane**: who may take an item, fixed at enqueue. The **claim lane** serves in-process
 *   and platform callers (`claim`): every kind, except that a tool_exec item is claimed only
 *   when its environment is `cloud`. The **poll lane** is the wire (`poll`): it serves exactly
 *   one thing, a tool_exec item of a `self_hosted` environment, to a customer's worker. The
 *   two never overlap, so an item a worker polled is never also run by the platform.
 * - **lease**: `lease_expires_at`, stamped by the database. Its exact value is the holder's
 *   **proof**: every write by a holder (`extend`, `complete`, `requeue`, `assert`) matches it
 *   by equality and fails with `LeaseLostError` when it no longer matches.
 * - **reclaim**: an item whose lease lapsed is taken again by the next `claim` (flagged
 *   `reclaimed`) or `poll` (under a fresh id). Reclaim is lazy; there is no sweeper.
 * - **keeper**: `keepLease` renews a holder's lease while it works and gives up — leaving the
 *   lease to lapse — when the holder stops reporting progress for its stall budget.
 * - **reservation**: on the poll lane a poll does not take the item; it reserves it for
 *   `reclaim` ms while it stays `queued`. `ack` makes it `starting` under a 30 s startup
 *   lease, the first `heartbeat` (`NO_HEARTBEAT`) makes it `active`, later heartbeats echo the
 *   server's last value (optimistic concurrency) and extend the lease.
 * - **wind-down**: a graceful `stop` of an active item makes it `stopping`; its worker drains
 *   and force-stops it. If that worker died, the lapse of its lease marks the wind-down as
 *   **abandoned** and `poll` or the `finalizeAbandoned` housekeeping settles it `stopped`.
 *
 * All times are database time, rendered as RFC 3339 UTC strings with microseconds (trailing
 * zeros trimmed, `Z`): a JS `Date` would drop the microseconds that proofs compare on.
 */

import type { Timestamp } from '../db/time.js';
import type { WorkDataType, WorkKind, WorkState } from '../db/work-enums.js';
import type { TraceContext } from '../telemetry/trace-header.js';

export type { Timestamp } from '../db/time.js';
export {
  WORK_DATA_TYPES,
  WORK_KINDS,
  WORK_LANES,
  WORK_STATES,
  type WorkDataType,
  type WorkKind,
  type WorkLane,
  type WorkState,
} from '../db/work-enums.js';
/** W3C trace context captured at enqueue: `{ traceparent, tracestate? }`. */
export type { TraceContext } from '../telemetry/trace-header.js';

/**
 * One item taken on the claim lane. `lease` is the holder's proof and moves with `extend`.
 * Always a session's item: healthchecks are poll-lane only (a check constraint says so).
 */
export interface Item {
  id: string;
  environmentId: string;
  sessionId: string;
  kind: WorkKind;
  lease: Timestamp;
  /** The previous holder let its lease lapse: surface recovery before replaying. */
  reclaimed: boolean;
  /** How many times the item has been handed out, this time included. */
  claims: number;
  metadata: Record<string, string>;
  traceContext: TraceContext | null;
}

/** A work item as the poll lane and the work API see it. */
export interface Work {
  id: string;
  environmentId: string;
  /** `session`: work for `sessionId`; `healthcheck`: a probe of the workers, `healthcheckId`. */
  dataType: WorkDataType;
  /** The session the item works for; null exactly for a healthcheck. */
  sessionId: string | null;
  /** A healthcheck's own id (`hc_…`); null exactly for a session's item. */
  healthcheckId: string | null;
  kind: WorkKind;
  state: WorkState;
  metadata: Record<string, string>;
  createdAt: Timestamp;
  acknowledgedAt: Timestamp | null;
  startedAt: Timestamp | null;
  /** The wire's `latest_heartbeat_at`; what a worker echoes as `expected_last_heartbeat`. */
  lastHeartbeat: Timestamp | null;
  stopRequestedAt: Timestamp | null;
  stoppedAt: Timestamp | null;
  /** The reservation or lease; internal, never rendered on the wire. */
  leaseExpiresAt: Timestamp | null;
  claims: number;
  traceContext: TraceContext | null;
}

/** A session's item: what `enqueue` makes, and all the claim lane ever holds. */
export type SessionWork = Work & { dataType: 'session'; sessionId: string; healthcheckId: null };

/** A healthcheck: what `enqueueHealthcheck` makes. */
export type HealthcheckWork = Work & { dataType: 'healthcheck'; sessionId: null; healthcheckId: string };

export interface HeartbeatResult {
  lastHeartbeat: Timestamp;
  state: WorkState;
  leaseExtended: boolean;
  ttlSeconds: number;
}

export interface WorkStats {
  /** Queued items a worker can take now: never reserved, or the reservation lapsed. */
  depth: number;
  /** Queued items polled but not yet acked (a live reservation). */
  pending: number;
  oldestQueuedAt: Timestamp | null;
  workersPolling: number;
}

/** The first heartbeat's `expected_last_heartbeat`: claim the lease of a just-acked item. */
export const NO_HEARTBEAT = 'NO_HEARTBEAT';
