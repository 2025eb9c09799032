/**
 * A fresh database per test file, on one of the three drivers, emptied before each test.
 *
 * - `pg`: a database cloned from the migrated template on the real PostgreSQL.
 * - `neon`: the same, reached through the Neon serverless Pool and the local wsproxy.
 * - `pglite`: an in-memory PGlite loaded from the migrated snapshot.
 */
import { readFile } from 'node:fs/promises';
import type { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import type pg from 'pg';
import { afterAll, beforeAll, beforeEach, inject } from 'vitest';
import { WebSocket } from 'ws';
import { connectNeon } from '../../src/db/drivers/neon.js';
import { connectPg } from '../../src/db/drivers/node-pg.js';
import { openPglite } from '../../src/db/drivers/pglite.js';
import type { Database } from '../../src/db/handle.js';
import { adminQuery, databaseUrl } from './postgres.js';

export type Driver = 'pg' | 'neon' | 'pglite';

export interface TestDb {
  driver: Driver;
  db: Database;
  /** The connection URL (server drivers only), for tests that open their own connections. */
  url: string | null;
  /** The pg pool (pg driver only), for tests that need raw connections. */
  pool: pg.Pool | null;
  pglite: PGlite | null;
  reset(): Promise<void>;
  close(): Promise<void>;
}

const TABLES =
  'journal_purges, queue_samples, worker_polls, session_tool_calls, session_events, work_items, sessions, agent_versions, agents, environment_keys, api_keys, environments';

/**
 * `empty`: a server driver's database is created bare instead of cloned from the template,
 * for tests of what a first start does to it (the migrations); `reset` needs the tables.
 */
export async function openTestDb(
  driver: Driver,
  options: { poolSize?: number; empty?: boolean } = {},
): Promise<TestDb> {
  if (driver === 'pglite') {
    const snapshot = await readFile(inject('pgliteSnapshot'));
    const lite = await openPglite(undefined, { loadDataDir: new Blob([snapshot]) });
    return {
      driver,
      db: lite.db,
      url: null,
      pool: null,
      pglite: lite.client,
      reset: async () => void (await lite.db.execute(sql.raw(`TRUNCATE ${TABLES}`))),
      close: lite.close,
    };
  }
  const template = inject('templateDatabase');
  const runPid = template.slice('leasehold_tpl_'.length);
  const name = `leasehold_t_${runPid}_${Math.random().toString(36).slice(2, 10)}`;
  await adminQuery(`CREATE DATABASE ${name}${options.empty ? '' : ` TEMPLATE ${template}`}`);
  const url = databaseUrl(name);
  const conn =
    driver === 'pg'
      ? connectPg(url, { max: options.poolSize ?? 10 })
      : connectNeon(url, {
          webSocketConstructor: WebSocket,
          localProxy: `127.0.0.1:${inject('wsProxyPort')}`,
        });
  return {
    driver,
    db: conn.db,
    url,
    pool: driver === 'pg' ? (conn.pool as pg.Pool) : null,
    pglite: null,
    reset: async () => void (await conn.db.execute(sql.raw(`TRUNCATE ${TABLES}`))),
    close: async () => {
      await conn.close();
      await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

/**
 * Registers the per-file database lifecycle and returns a handle whose fields are filled in
 * by `beforeAll`: open once per file, empty before each test, drop after the file.
 */
export function useTestDb(driver: Driver, options: { poolSize?: number } = {}): TestDb {
  const handle = {} as TestDb;
  beforeAll(async () => {
    Object.assign(handle, await openTestDb(driver, options));
  }, 60_000);
  beforeEach(async () => {
    await handle.reset();
  });
  afterAll(async () => {
    await handle.close?.();
  });
  return handle;
}
