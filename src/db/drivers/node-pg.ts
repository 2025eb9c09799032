/**
 * The `pg` driver (Node): a connection pool behind Drizzle. The pool's size is the caller's
 * policy; Leasehold never holds a pooled connection while it waits (long polls listen on
 * their own connection).
 */
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';
import {
  DEFAULT_DB_ACQUIRE_TIMEOUT_MS,
  DEFAULT_DB_IDLE_TIMEOUT_MS,
  DEFAULT_DB_POOL_SIZE,
} from '../../config.js';
import { directExecute, drizzleTypes, type Queryable, type TypeParsers } from './direct.js';
import { PreparingClient } from './prepared.js';

export interface PgConnection {
  db: NodePgDatabase;
  pool: pg.Pool;
  close(): Promise<void>;
}

export interface PgOptions {
  /** Pool size (default 10). */
  max?: number;
  /**
   * How long a query waits for a pooled connection (or a new one to connect) before it fails
   * (default 3,000 ms). Without a bound an exhausted pool or a database that swallows
   * connection attempts would hang requests; with it they fail and the API answers 503.
   */
  acquireTimeoutMs?: number;
  /** How long an unused pooled connection is kept before it is closed (default 60 s). */
  idleTimeoutMs?: number;
  /** Called for errors of idle pooled connections (e.g. the server restarted). */
  onError?: (err: Error) => void;
  /**
   * Prepare repeated statements on each connection (default true; see `prepared.ts`). Off
   * behind a transaction-mode pooler that does not support protocol-level prepared statements.
   */
  prepare?: boolean;
}

export function connectPg(url: string, options: PgOptions = {}): PgConnection {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? DEFAULT_DB_POOL_SIZE,
    connectionTimeoutMillis: options.acquireTimeoutMs ?? DEFAULT_DB_ACQUIRE_TIMEOUT_MS,
    idleTimeoutMillis: options.idleTimeoutMs ?? DEFAULT_DB_IDLE_TIMEOUT_MS,
    // A peer that vanished without a FIN (host down, network cut) is found by keepalive
    // probes instead of on the next write.
    keepAlive: true,
    ...(options.prepare === false ? {} : { Client: PreparingClient }),
  });
  // An idle client's socket error is emitted on the pool; unhandled, it would crash the process.
  pool.on('error', options.onError ?? (() => {}));
  const db = drizzle({ client: pool });
  // Raw queries outside a transaction skip Drizzle's session (direct.ts): the same rows and
  // errors for ≈ 8 % less of the server's JS on the work API's hot path. Transactions and the
  // migrator keep Drizzle's session.
  db.execute = directExecute(
    pool as unknown as Queryable,
    drizzleTypes(pg.types.getTypeParser as TypeParsers),
  ) as typeof db.execute;
  return { db, pool, close: () => pool.end() };
}

/** An arbitrary constant naming Leasehold's migration lock among advisory locks. */
const MIGRATION_LOCK = 7_340_172_233;

/**
 * Applies the migrations in `migrationsFolder` (the project's `drizzle/`). Replicas that
 * start together would otherwise race the migrator (it takes no lock of its own): a
 * session-level advisory lock, held on a connection of its own, lets one apply them while the
 * others wait and then find nothing left to do.
 */
export async function migratePg(db: NodePgDatabase, migrationsFolder: string, url?: string): Promise<void> {
  if (url === undefined) {
    await migrate(db, { migrationsFolder });
    return;
  }
  const lock = new pg.Client({ connectionString: url });
  await lock.connect();
  try {
    await lock.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await migrate(db, { migrationsFolder });
  } finally {
    await lock.end().catch(() => {});
  }
}

export interface Listener {
  close(): Promise<void>;
}

/**
 * LISTENs on `channels` over one dedicated connection (never a pooled one) and hands each
 * payload to `onPayload` with its channel. When the connection drops it reconnects with
 * backoff and calls `onReconnect`, since notifications sent while it was away are gone.
 */
export function listenPg(
  url: string,
  channels: readonly string[],
  onPayload: (payload: string, channel: string) => void,
  onReconnect: () => void,
  onError: (err: Error) => void = () => {},
): Listener {
  let client: pg.Client | null = null;
  let closed = false;
  let retry: ReturnType<typeof setTimeout> | null = null;
  let attempt = 0;

  const connect = async () => {
    const c = new pg.Client({ connectionString: url });
    client = c;
    c.on('notification', (n) => n.payload !== undefined && onPayload(n.payload, n.channel));
    c.on('error', (err) => {
      onError(err);
      schedule();
    });
    try {
      await c.connect();
      for (const channel of channels) await c.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      if (attempt > 0) onReconnect();
      attempt = 0;
    } catch (err) {
      onError(err as Error);
      schedule();
    }
  };
  const schedule = () => {
    if (closed || retry) return;
    const old = client;
    client = null;
    old?.end().catch(() => {});
    attempt++;
    retry = setTimeout(
      () => {
        retry = null;
        void connect();
      },
      Math.min(100 * 2 ** attempt, 5_000),
    );
  };
  void connect();
  return {
    close: async () => {
      closed = true;
      if (retry) clearTimeout(retry);
      await client?.end().catch(() => {});
    },
  };
}
