/**
 * The wire shapes, field by field as the official SDK types them, and the list cursor.
 * Every nullable field is present (holding null); trace context never appears in a body.
 */
import * as z from 'zod/mini';
import type { HeartbeatResult, Work, WorkCursor, WorkStats } from '../queue/index.js';
import { decodeKeysetCursor, encodeKeysetCursor } from './cursor.js';

export interface WireWork {
  type: 'work';
  id: string;
  environment_id: string;
  created_at: string;
  data: WireWorkData;
  state: Work['state'];
  metadata: Record<string, string>;
  acknowledged_at: string | null;
  latest_heartbeat_at: string | null;
  started_at: string | null;
  stop_requested_at: string | null;
  stopped_at: string | null;
  secret: null;
}

/** What the item is for: the SDK's `BetaSessionWorkData` or `BetaHealthCheckWorkData`. */
export type WireWorkData = { type: 'session'; id: string } | { type: 'healthcheck'; id: string };

/** The item's `data`; the data check keeps exactly one of the two ids set, as `dataType` says. */
function toWireWorkData(w: Work): WireWorkData {
  if (w.dataType === 'healthcheck' && w.healthcheckId !== null)
    return { type: 'healthcheck', id: w.healthcheckId };
  if (w.dataType === 'session' && w.sessionId !== null) return { type: 'session', id: w.sessionId };
  throw new Error(`work item ${w.id}: data_type ${w.dataType} without its id`);
}

export function toWireWork(w: Work): WireWork {
  return {
    type: 'work',
    id: w.id,
    environment_id: w.environmentId,
    created_at: w.createdAt,
    data: toWireWorkData(w),
    state: w.state,
    metadata: w.metadata,
    acknowledged_at: w.acknowledgedAt,
    latest_heartbeat_at: w.lastHeartbeat,
    started_at: w.startedAt,
    stop_requested_at: w.stopRequestedAt,
    stopped_at: w.stoppedAt,
    // Vault credentials for self-hosted workers are not issued: workers use their environment key.
    secret: null,
  };
}

export function toWireHeartbeat(h: HeartbeatResult) {
  return {
    type: 'work_heartbeat' as const,
    last_heartbeat: h.lastHeartbeat,
    lease_extended: h.leaseExtended,
    state: h.state,
    ttl_seconds: h.ttlSeconds,
  };
}

export function toWireStats(s: WorkStats) {
  return {
    type: 'work_queue_stats' as const,
    depth: s.depth,
    pending: s.pending,
    oldest_queued_at: s.oldestQueuedAt,
    workers_polling: s.workersPolling,
  };
}

/** Opaque list cursor of the work list (see cursor.ts). */
export const encodeCursor = (c: WorkCursor): string => encodeKeysetCursor('v1', c);
export const decodeCursor = (page: string): WorkCursor | null => decodeKeysetCursor('v1', 'work', page);

const stamp = z.string().check(z.describe('RFC 3339 UTC, microseconds, trailing zeros trimmed'));
export const wireWorkSchema = z.object({
  type: z.literal('work'),
  id: z.string(),
  environment_id: z.string(),
  created_at: stamp,
  data: z
    .discriminatedUnion('type', [
      z.object({
        type: z.literal('session'),
        id: z.string().check(z.describe('the session the item works for')),
      }),
      z.object({
        type: z.literal('healthcheck'),
        id: z.string().check(z.describe('the healthcheck’s own id (hc_…)')),
      }),
    ])
    .check(
      z.describe('what the item is for: a session’s work, or a healthcheck of the environment’s workers'),
    ),
  state: z.enum(['queued', 'starting', 'active', 'stopping', 'stopped']),
  metadata: z.record(z.string(), z.string()),
  acknowledged_at: z.nullable(stamp),
  latest_heartbeat_at: z.nullable(stamp),
  started_at: z.nullable(stamp),
  stop_requested_at: z.nullable(stamp),
  stopped_at: z.nullable(stamp),
  secret: z.null(),
});
export const wireHeartbeatSchema = z.object({
  type: z.literal('work_heartbeat'),
  last_heartbeat: stamp,
  lease_extended: z.boolean(),
  state: wireWorkSchema.shape.state,
  ttl_seconds: z.int(),
});
export const wireStatsSchema = z.object({
  type: z.literal('work_queue_stats'),
  depth: z.int(),
  pending: z.int(),
  oldest_queued_at: z.nullable(stamp),
  workers_polling: z.int(),
});
export const wireWorkListSchema = z.object({
  data: z.array(wireWorkSchema),
  next_page: z.nullable(z.string()),
});
