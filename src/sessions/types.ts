/**
 * Sessions and their event log, as the queue's platform sees them.
 *
 * - **session**: a conversation between a user and an agent, bound to one environment for
 *   life. Opened by the platform lane (an opaque id, no agent: the platform runs its own
 *   brain) or by `POST /v1/sessions` (a `sess_` id and a snapshot of the agent it runs).
 * - **event**: one entry of the session's append-only log, numbered 1, 2, 3 … (`seq`)
 *   without gaps; `processed_at` never decreases along the numbers.
 * - **tool call**: an `agent.tool_use` / `agent.custom_tool_use` event and its answer.
 */
import type { SESSION_STATUSES } from '../db/schema.js';
import type { Timestamp } from '../db/time.js';

export type SessionStatus = (typeof SESSION_STATUSES)[number];

export interface Session {
  id: string;
  environmentId: string;
  /** The agent snapshot (the wire's `session.agent`); null for a platform-lane session. */
  agent: Record<string, unknown> | null;
  agentId: string | null;
  agentVersion: number | null;
  status: SessionStatus;
  title: string | null;
  metadata: Record<string, string>;
  resources: unknown[];
  usage: Record<string, number>;
  /** Seconds spent running, the current running span included. */
  activeSeconds: number;
  /** Seconds since creation (frozen at the last update once terminated). */
  durationSeconds: number;
  lastSeq: number;
  createdAt: Timestamp;
  updatedAt: Timestamp;
  archivedAt: Timestamp | null;
}

/** A stored event. `body` is every wire field but id, type and processed_at. */
export interface SessionEvent {
  sessionId: string;
  seq: number;
  id: string;
  type: string;
  body: Record<string, unknown>;
  processedAt: Timestamp;
  /** The brain's turn whose model response this agent event projects; null otherwise. */
  turn: number | null;
}

/** An event to append: the log mints its id, sequence number and processed_at. */
export interface NewEvent {
  type: string;
  body: Record<string, unknown>;
  turn?: number | null;
}

/** The wire form of an event: `{id, type, processed_at, ...body}`. */
export function toWireEvent(event: SessionEvent): Record<string, unknown> {
  return { ...event.body, id: event.id, type: event.type, processed_at: event.processedAt };
}
