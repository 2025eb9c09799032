/**
 * The Neon serverless driver: Postgres over a WebSocket, for runtimes without TCP sockets
 * (Workers). On Workers a pool must not outlive the request that made it, so callers open
 * one per request and close it before returning.
 */
import { neonConfig, Pool, types } from '@neondatabase/serverless';
import type { Database } from '../handle.js';
import { directDatabase, type QueryPool, type TypeParsers } from './direct.js';

export interface NeonConnection {
  db: Database;
  pool: Pool;
  /**
   * LISTENs on `channel` on this Pool's connection and hands each payload to `onPayload`;
   * settles once the LISTEN has committed, rejects when the server refused it. The connection
   * goes back to the Pool listening, so the request's next statements run on it (one
   * connection, not two) and its notifications keep arriving until the Pool closes.
   */
  listen(channel: string, onPayload: (payload: string) => void): Promise<void>;
  close(): Promise<void>;
}

export interface NeonOptions {
  /** A WebSocket class, for runtimes without a global one (Node 20: the `ws` package). */
  webSocketConstructor?: unknown;
  /**
   * `host:port` of a plain (no TLS) WebSocket-to-TCP proxy speaking Neon's wsproxy protocol,
   * for local development and tests against an ordinary Postgres. Production leaves it unset.
   */
  localProxy?: string;
  /**
   * Send the start-up message, the password and the first statement in one flight instead of
   * waiting for the server between them (one round trip per new connection instead of two).
   * Needs a server that asks for a cleartext password, as Neon's proxy does; a local server
   * with trust or SCRAM authentication needs it off. Default: on, off with `localProxy`.
   */
  pipelineConnect?: boolean;
}

export function connectNeon(url: string, options: NeonOptions = {}): NeonConnection {
  if (options.webSocketConstructor) {
    neonConfig.webSocketConstructor = options.webSocketConstructor as typeof neonConfig.webSocketConstructor;
  }
  if (options.localProxy) {
    const proxy = options.localProxy;
    neonConfig.wsProxy = (host, port) => `${proxy}/v1?address=${host}:${port}`;
    neonConfig.useSecureWebSocket = false;
  }
  neonConfig.pipelineConnect = (options.pipelineConnect ?? !options.localProxy) ? 'password' : false;
  // No idle timeout: the Pool lives for one request, and a connection that LISTENs sits idle
  // between notifications for longer than the default 10 s (an event stream's).
  const pool = new Pool({ connectionString: url, idleTimeoutMillis: 0 });
  // Sockets torn down after end() surface here; unhandled they crash the isolate.
  pool.on('error', () => {});
  return {
    db: directDatabase(pool as unknown as QueryPool, types.getTypeParser as TypeParsers),
    pool,
    listen: async (channel, onPayload) => {
      const client = await pool.connect();
      client.on('notification', (n) => {
        if (n.channel === channel && n.payload !== undefined) onPayload(n.payload);
      });
      try {
        await client.query(`LISTEN ${client.escapeIdentifier(channel)}`);
      } finally {
        // A refused LISTEN leaves the connection usable: the request's statements still run on it.
        client.release();
      }
    },
    close: () => pool.end(),
  };
}
