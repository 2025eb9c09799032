/**
 * Connecting to NATS over WebSockets (`wsconnect`), the transport every runtime we target has.
 * Node 20 has no global WebSocket, and there `wsconnect` would hang forever rather than fail;
 * so the caller may hand one in, and every connect is bounded by a timeout of our own.
 *
 * A reconnecting connection keeps trying for as long as it lives: the client's default gives
 * up after 10 attempts (about 20 s), and a long-lived server connection would then stay closed
 * after any longer NATS outage. While it is down, journal calls fail at once (link.ts).
 *
 * A server that cannot be reached (or does not answer in time) is `JournalUnavailableError`,
 * the same outage a journal call meets on a dropped connection: a host that connects per
 * request answers it as the documented 503, and a brain gives up its turn for later. A URL or
 * a runtime that can never connect stays a plain `JournalTransportError`.
 *
 * `url` may list several servers of one cluster, comma-separated: the client starts on any that
 * answers and fails over to the others (and to those the cluster announces) when its own goes.
 */
import { type NatsConnection, wsconnect } from '@nats-io/nats-core';
import { JournalTransportError, JournalUnavailableError } from './errors.js';
import { watchLink } from './link.js';

export interface JournalConnectOptions {
  /** A WebSocket class for runtimes without a global one (Node 20: the `ws` package's). */
  webSocket?: unknown;
  /** Give up connecting after this long (default 5 s). */
  timeoutMs?: number;
  name?: string;
  /** Reconnect after a dropped connection (default true; per-request connections may turn it off). */
  reconnect?: boolean;
}

type WebSocketClass = new (url: string) => WebSocket;

export async function connectJournal(
  url: string,
  options: JournalConnectOptions = {},
): Promise<NatsConnection> {
  const servers = url.split(',').map((u) => u.trim());
  for (const server of servers) {
    if (!/^wss?:\/\//.test(server))
      throw new JournalTransportError(`NATS URL must be ws:// or wss://, got ${server}`);
  }
  const Socket = (options.webSocket ?? (globalThis as { WebSocket?: unknown }).WebSocket) as
    | WebSocketClass
    | undefined;
  if (typeof Socket !== 'function') {
    throw new JournalTransportError(
      'no WebSocket implementation: pass one (e.g. the `ws` package) as `webSocket`',
    );
  }
  const timeoutMs = options.timeoutMs ?? 5_000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new JournalUnavailableError(`could not connect to ${url} within ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  const connecting = wsconnect({
    servers,
    name: options.name ?? 'leasehold',
    timeout: timeoutMs,
    reconnect: options.reconnect ?? true,
    maxReconnectAttempts: -1,
    // Otherwise the client builds two Error objects per request (a JetStream publish is one)
    // only to give a failed request the stack it was sent from; their stack capture was about
    // a tenth of the CPU of a process appending to the journal. Journal calls wrap every
    // failure in a typed error of their own, which carries the caller's stack anyway.
    noAsyncTraces: true,
    wsFactory: async (u: string) => ({ socket: new Socket(u), encrypted: u.startsWith('wss://') }),
  });
  try {
    const nc = await Promise.race([connecting, timeout]);
    watchLink(nc);
    return nc;
  } catch (err) {
    // A connection that completes after we gave up must not leak.
    connecting.then((nc) => nc.close()).catch(() => {});
    if (err instanceof JournalTransportError) throw err;
    throw new JournalUnavailableError(`could not connect to ${url}: ${(err as Error).message}`, {
      cause: err,
    });
  } finally {
    clearTimeout(timer);
  }
}
