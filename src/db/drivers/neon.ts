/**
 * The Neon serverless driver: Postgres over a WebSocket, for runtimes without TCP sockets
 * (Workers). On Workers a pool must not outlive the request that made it, so callers open
 * one per request and close it before returning.
 */
import { neonConfig, Pool } from '@neondatabase/serverless';
import { drizzle, type NeonDatabase } from 'drizzle-orm/neon-serverless';

export interface NeonConnection {
  db: NeonDatabase;
  pool: Pool;
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
}

export function connectNeon(url: string, options: NeonOptions = {}): NeonConnection {
  if (options.webSocketConstructor) {
    neonConfig.webSocketConstructor = options.webSocketConstructor as typeof neonConfig.webSocketConstructor;
  }
  if (options.localProxy) {
    const proxy = options.localProxy;
    neonConfig.wsProxy = (host, port) => `${proxy}/v1?address=${host}:${port}`;
    neonConfig.useSecureWebSocket = false;
    // Pipelining the startup assumes cleartext password auth, which a local server may not use.
    neonConfig.pipelineConnect = false;
  }
  const pool = new Pool({ connectionString: url });
  // Sockets torn down after end() surface here; unhandled they crash the isolate.
  pool.on('error', () => {});
  return { db: drizzle({ client: pool }), pool, close: () => pool.end() };
}
