import { inJsonbOrder } from '../db/jsonb.js';
import type { Timestamp } from '../db/time.js';
import type { SessionWork, TraceContext, WorkKind } from './types.js';

/** What an enqueue's insert writes for one new item, besides the values it states itself. */
export interface NewItem {
  id: string;
  environmentId: string;
  sessionId: string;
  kind: WorkKind;
  metadata: Record<string, string>;
  traceContext: TraceContext | null;
}

/**
 * The item an enqueue's insert just stored, built from what the client sent and the one value
 * only the database knows (`createdAt`), instead of read back: parsing every new row's
 * columns was the largest part of a batch's client time. The inserts state `queued`,
 * `session`, 0 claims and no stamps themselves, so this mirrors their statements, not the
 * table's defaults; fields come in the order of the `Work` projection.
 */
export function createdWork(item: NewItem, createdAt: Timestamp): SessionWork {
  return {
    id: item.id,
    environmentId: item.environmentId,
    dataType: 'session',
    sessionId: item.sessionId,
    healthcheckId: null,
    kind: item.kind,
    state: 'queued',
    metadata: inJsonbOrder(item.metadata),
    createdAt,
    acknowledgedAt: null,
    startedAt: null,
    lastHeartbeat: null,
    stopRequestedAt: null,
    stoppedAt: null,
    leaseExpiresAt: null,
    claims: 0,
    traceContext: item.traceContext === null ? null : inJsonbOrder(item.traceContext),
  };
}
