import type { Context, Hono } from 'hono';
import { type SSEStreamingApi, streamSSE } from 'hono/streaming';
import { pause } from '../../clock.js';
import { newId } from '../../ids.js';
import { listEvents, sessionHead, toWireEvent } from '../../sessions/index.js';
import { ANY_KEY, authorize } from '../auth.js';
import { document } from '../openapi.js';
import type { AppEnv } from '../types.js';
import type { Watch } from '../wake.js';
import { SESSION_EVENTS, visibleSession } from './session-scope.js';

/** A ping at least this often: proxies and the SDK's reader see a live connection. */
export const PING_MS = 15_000;
/** Events written per read of the log. */
const BATCH = 500;
/**
 * Without a wake-up feed (Workers with LEASEHOLD_LISTEN off) the stream re-reads the session's
 * head on a backoff from MIN to MAX while nothing happens. On Workers it closes cleanly after
 * LIFETIME (`deps.streamLifetimeMs`), with or without a feed: a Worker request should not live
 * for ever, and the SDK reconnects and re-lists on its own (its reconnect delay grows only
 * after closes without events, up to 10 s).
 */
export const POLL_MIN_MS = 200;
export const POLL_MAX_MS = 2_000;
export const LIFETIME_MS = 5 * 60_000;
/** The events after which nothing more is written to the session: the stream ends. */
const TERMINAL = new Set(['session.status_terminated', 'session.deleted']);

/**
 * GET /v1/sessions/{id}/events/stream — Server-Sent Events of what is appended after the
 * stream opens (a client rebuilds earlier history from the list), each frame `event: <type>`
 * and `data: <the event>`; `event: ping` every 15 s; a deleted session ends the stream with a
 * `session.deleted` frame. With a wake-up feed (Node; Workers with LISTEN) the stream wakes on
 * NOTIFY and reads nothing while idle (on Workers, once per RECHECK_MS of silence).
 */
export function registerSessionEventsStream(app: Hono<AppEnv>): void {
  document({
    method: 'get',
    path: `${SESSION_EVENTS}/stream`,
    summary: "Stream a session's events (SSE)",
    credentials: ['admin_api_key', 'platform_api_key', 'environment_key'],
    responses: {
      200: { description: 'text/event-stream: one frame per event, `event: ping` every 15 s', schema: null },
    },
  });
  app.get(`${SESSION_EVENTS}/stream`, async (c) => {
    const caller = await authorize(c, ANY_KEY);
    const session = await visibleSession(c, caller);
    // Watch, then read the head, both before the response starts: every event appended after
    // the client has the response headers is delivered, and nothing appended in between goes
    // unnoticed.
    const watch = c.get('deps').sessionWake?.watch(session.id) ?? null;
    const head = session.lastSeq;
    return streamSSE(c, async (stream) => {
      try {
        await follow(c, stream, session.id, head, watch);
      } catch (err) {
        // Caught here rather than in streamSSE's onError: after that handler Hono writes a
        // second `error` frame carrying the raw message, which would reveal the failure.
        c.get('deps').log?.warn('event stream failed', {
          session_id: session.id,
          error: (err as Error).message,
        });
        await stream.writeSSE({
          event: 'error',
          data: JSON.stringify({
            type: 'error',
            error: { type: 'api_error', message: 'the event stream failed' },
          }),
        });
      } finally {
        watch?.close();
      }
    });
  });
}

async function follow(
  c: Context<AppEnv>,
  stream: SSEStreamingApi,
  sessionId: string,
  from: number,
  watch: Watch | null,
): Promise<void> {
  const { db, streamLifetimeMs } = c.get('deps');
  const lifetimeMs = streamLifetimeMs ?? (watch ? Number.POSITIVE_INFINITY : LIFETIME_MS);
  const signal = c.req.raw.signal;
  const closed = new AbortController();
  stream.onAbort(() => closed.abort());
  signal.addEventListener('abort', () => closed.abort(), { once: true });
  const opened = performance.now();
  let after: number | null = from;
  let lastWrite = performance.now();
  let backoff = POLL_MIN_MS;
  // With a wake-up feed the log is read only when it may have changed: at the start and on a
  // notification, never because a ping came due (an idle stream costs no statement).
  let changed = true;
  // A watch on the request's own connection hears what commits after its LISTEN: the first
  // read comes after that.
  await watch?.listen?.();
  while (!closed.signal.aborted && after !== null) {
    if (performance.now() - opened >= lifetimeMs) return;
    if (!changed) {
      await stream.writeSSE({ event: 'ping', data: '{}' });
      lastWrite = performance.now();
      changed = await watch!.wait(PING_MS, closed.signal);
      continue;
    }
    const { lastSeq: head, now } = await sessionHead(db, sessionId);
    if (head === null) {
      await stream.writeSSE({
        event: 'session.deleted',
        // The SDK's BetaManagedAgentsSessionDeletedEvent: an event id of its own and when.
        data: JSON.stringify({ type: 'session.deleted', id: newId('sevt'), processed_at: now }),
      });
      return;
    }
    while (head > after) {
      const events = await listEvents(db, sessionId, { order: 'asc', afterSeq: after, fetch: BATCH });
      if (events.length === 0) break;
      for (const e of events) {
        await stream.writeSSE({ event: e.type, data: JSON.stringify(toWireEvent(e)) });
        after = e.seq;
        if (TERMINAL.has(e.type)) return;
      }
      lastWrite = performance.now();
      backoff = POLL_MIN_MS;
    }
    const sincePing = performance.now() - lastWrite;
    if (sincePing >= PING_MS) {
      await stream.writeSSE({ event: 'ping', data: '{}' });
      lastWrite = performance.now();
    }
    const untilPing = PING_MS - (performance.now() - lastWrite);
    if (watch) {
      changed = await watch.wait(Math.max(1, untilPing), closed.signal);
    } else {
      await pause(Math.max(1, Math.min(backoff, untilPing)), closed.signal);
      backoff = Math.min(POLL_MAX_MS, Math.round(backoff * 1.5));
    }
  }
}
