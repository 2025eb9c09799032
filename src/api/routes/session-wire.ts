/**
 * Sessions and their events on the wire — the SDK's `BetaManagedAgentsSession` field by field,
 * and `BetaManagedAgentsSessionEvent` as `{id, type, processed_at, ...fields}` — with the
 * cursors of their lists.
 */
import * as z from 'zod/mini';
import { fromBase64UrlText, toBase64Url } from '../../base64.js';
import { type Session, type SessionEvent, toWireEvent } from '../../sessions/index.js';
import { decodeKeysetCursor, encodeKeysetCursor } from '../cursor.js';

export function toWireSession(s: Session) {
  return {
    type: 'session' as const,
    id: s.id,
    agent: s.agent!,
    environment_id: s.environmentId,
    status: s.status,
    title: s.title,
    metadata: s.metadata,
    resources: s.resources,
    // Leasehold enforces no spend ceiling (a budget is refused at create), keeps no vaults
    // and evaluates no outcomes: honest empties.
    budget: null,
    vault_ids: [] as string[],
    outcome_evaluations: [] as unknown[],
    stats: { active_seconds: round(s.activeSeconds), duration_seconds: round(s.durationSeconds) },
    usage: {
      input_tokens: s.usage.input_tokens ?? 0,
      output_tokens: s.usage.output_tokens ?? 0,
      cache_read_input_tokens: s.usage.cache_read_input_tokens ?? 0,
      cache_creation: {
        ephemeral_1h_input_tokens: 0,
        ephemeral_5m_input_tokens: s.usage.cache_creation_input_tokens ?? 0,
      },
      active_seconds: round(s.activeSeconds),
    },
    archived_at: s.archivedAt,
    created_at: s.createdAt,
    updated_at: s.updatedAt,
  };
}

const round = (seconds: number) => Math.round(seconds * 1000) / 1000;

export { toWireEvent };

const stamp = z.string().check(z.describe('RFC 3339 UTC, microseconds, trailing zeros trimmed'));
export const wireSessionSchema = z.object({
  type: z.literal('session'),
  id: z.string(),
  agent: z.record(z.string(), z.unknown()),
  environment_id: z.string(),
  status: z.enum(['idle', 'running', 'rescheduling', 'terminated']),
  title: z.nullable(z.string()),
  metadata: z.record(z.string(), z.string()),
  resources: z.array(z.unknown()),
  budget: z.null(),
  vault_ids: z.array(z.string()),
  outcome_evaluations: z.array(z.unknown()),
  stats: z.object({ active_seconds: z.number(), duration_seconds: z.number() }),
  usage: z.record(z.string(), z.unknown()),
  archived_at: z.nullable(stamp),
  created_at: stamp,
  updated_at: stamp,
});
export const wireSessionListSchema = z.object({
  data: z.array(wireSessionSchema),
  next_page: z.nullable(z.string()),
  prev_page: z.nullable(z.string()),
});
export const wireEventSchema = z.catchall(
  z.object({ id: z.string(), type: z.string(), processed_at: stamp }),
  z.unknown(),
);
export const wireEventListSchema = z.object({
  data: z.array(wireEventSchema),
  next_page: z.nullable(z.string()),
});

const SESSIONS_TAG = 'sessions-v1';
export const encodeSessionCursor = (s: Session) =>
  encodeKeysetCursor(SESSIONS_TAG, { createdAt: s.createdAt, id: s.id });
export const decodeSessionCursor = (page: string) => decodeKeysetCursor(SESSIONS_TAG, 'sess', page);

/** Event cursors: `events-v1|<seq>` of the last event returned, base64url. */
const EVENTS_TAG = 'events-v1';
export const encodeEventCursor = (e: SessionEvent) => toBase64Url(`${EVENTS_TAG}|${e.seq}`);
export function decodeEventCursor(page: string): number | null {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(page)) return null;
  let text: string;
  try {
    text = fromBase64UrlText(page);
  } catch {
    return null;
  }
  const m = /^events-v1\|(\d{1,10})$/.exec(text);
  if (!m) return null;
  const seq = Number(m[1]);
  return seq <= 2_147_483_647 ? seq : null;
}
