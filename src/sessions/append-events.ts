import { sql } from 'drizzle-orm';
import { rows, type SqlHandle } from '../db/handle.js';
import { newId } from '../ids.js';
import { EVENT_COLUMNS, SESSION_EVENTS_CHANNEL } from './sql.js';
import type { NewEvent, SessionEvent, SessionStatus } from './types.js';

export interface AppendOptions {
  /** The status the session is in after these events (a `session.status_*` among them). */
  status?: SessionStatus;
  /** Model usage to add to the session's totals (numeric fields only). */
  usage?: Record<string, number>;
}

/**
 * Appends events to a session's log in one statement and returns them as stored, or null
 * when the session does not exist. The session row's UPDATE takes the next numbers under its
 * row lock, so concurrent appends serialize: numbers are dense, and `processed_at` — the
 * later of the clock and the previous append's — never decreases along them. The same
 * UPDATE moves the status (closing or opening a running span) and adds usage, and the
 * statement NOTIFYs the session's streams (at commit). In a caller's transaction the row lock
 * is held until it ends: every append and trigger of that transaction is one step of the log.
 */
export async function appendEvents(
  db: SqlHandle,
  sessionId: string,
  events: NewEvent[],
  options: AppendOptions = {},
): Promise<SessionEvent[] | null> {
  if (events.length === 0) throw new TypeError('appendEvents: nothing to append');
  const n = events.length;
  const batch = events.map((e, i) => ({
    ord: i + 1,
    id: newId('sevt'),
    type: e.type,
    body: e.body,
    turn: e.turn ?? null,
  }));
  const status = options.status ?? null;
  const usage = options.usage ? JSON.stringify(options.usage) : null;
  const appended = await rows<SessionEvent & { base: number }>(
    db,
    sql`WITH head AS (
      UPDATE sessions s
         SET last_seq = s.last_seq + ${n},
             last_event_at = greatest(clock_timestamp(), coalesce(s.last_event_at, '-infinity')),
             status = coalesce(${status}::text, s.status),
             active_seconds = s.active_seconds
               + CASE WHEN ${status}::text IS DISTINCT FROM 'running' AND ${status}::text IS NOT NULL
                           AND s.running_since IS NOT NULL
                      THEN extract(epoch FROM greatest(clock_timestamp() - s.running_since, interval '0'))
                      ELSE 0 END,
             running_since = CASE WHEN ${status}::text IS NULL THEN s.running_since
                                  WHEN ${status}::text = 'running' THEN coalesce(s.running_since, clock_timestamp())
                                  END,
             usage = CASE WHEN ${usage}::jsonb IS NULL THEN s.usage
                          ELSE (SELECT coalesce(jsonb_object_agg(k, coalesce((s.usage ->> k)::numeric, 0)
                                                                  + coalesce((${usage}::jsonb ->> k)::numeric, 0)), '{}')
                                  FROM (SELECT jsonb_object_keys(s.usage) UNION SELECT jsonb_object_keys(${usage}::jsonb)) AS keys(k))
                          END,
             updated_at = now()
       WHERE s.id = ${sessionId}
      RETURNING s.last_seq - ${n} AS base, s.last_event_at AS at
    ), e AS (
      INSERT INTO session_events (session_id, seq, id, type, body, processed_at, turn)
      SELECT ${sessionId}, head.base + b.ord, b.id, b.type, b.body, head.at, b.turn
        FROM head, jsonb_to_recordset(${JSON.stringify(batch)}::jsonb) AS b(ord int, id text, type text, body jsonb, turn int)
      RETURNING *
    )
    SELECT ${EVENT_COLUMNS}, head.base,
           CASE WHEN e.seq = head.base + 1 THEN pg_notify(${SESSION_EVENTS_CHANNEL}, e.session_id)::text END AS notified
      FROM e, head
     ORDER BY e.seq`,
  );
  if (appended.length === 0) return null;
  return appended.map(
    ({ base: _base, notified: _n, ...event }: SessionEvent & { base: number; notified?: unknown }) => event,
  );
}
