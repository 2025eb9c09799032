/**
 * Runs once before the suite: first the programs the tests need (nats-server, Chromium:
 * installed where the machine allows it, else the run stops with what to install), then a
 * migrated template database on the real PostgreSQL (each test file clones it), a migrated
 * PGlite snapshot (each embedded-driver file loads it), and the WebSocket proxy the Neon driver
 * reaches PostgreSQL through.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { connectPg, migratePg } from '../src/db/drivers/node-pg.js';
import { migratePglite, openPglite } from '../src/db/drivers/pglite.js';
import { startNatsServer } from './helpers/nats-server.js';
import { adminQuery, databaseUrl } from './helpers/postgres.js';
import { ensureTestPrereqsOrExit } from './helpers/prereqs.js';
import { startWsProxy } from './helpers/ws-proxy.js';

declare module 'vitest' {
  export interface ProvidedContext {
    templateDatabase: string;
    pgliteSnapshot: string;
    wsProxyPort: number;
    workerdDatabaseUrl: string;
    workerdNatsUrl: string;
    /** The monitoring endpoints of that nats-server: the workerd suite counts connections there. */
    workerdNatsMonitorUrl: string;
  }
}

export const MIGRATIONS = path.resolve(import.meta.dirname, '../drizzle');

export default async function setup(project: TestProject) {
  // Before anything else: a missing program is installed, or named, before any other failure.
  ensureTestPrereqsOrExit();
  const template = `leasehold_tpl_${process.pid}`;
  await dropTestDatabases();
  await adminQuery(`CREATE DATABASE ${template}`);
  const conn = connectPg(databaseUrl(template), { max: 1 });
  try {
    await migratePg(conn.db, MIGRATIONS);
  } finally {
    await conn.close();
  }
  project.provide('templateDatabase', template);
  // The workerd suite cannot create databases (no TCP driver there): it gets one made here,
  // cloned before any test file holds a connection to the template.
  const workerdDatabase = `leasehold_t_${process.pid}_workerd`;
  await adminQuery(`CREATE DATABASE ${workerdDatabase} TEMPLATE ${template}`);
  project.provide('workerdDatabaseUrl', databaseUrl(workerdDatabase));

  const dir = await mkdtemp(path.join(tmpdir(), 'leasehold-test-'));
  const lite = await openPglite();
  await migratePglite(lite.db, MIGRATIONS);
  const snapshot = path.join(dir, 'pglite.tar.gz');
  await writeFile(snapshot, Buffer.from(await (await lite.client.dumpDataDir('gzip')).arrayBuffer()));
  await lite.close();
  project.provide('pgliteSnapshot', snapshot);

  // The workerd suite cannot spawn processes either: its nats-server is started here.
  const nats = await startNatsServer('', { monitor: true });
  project.provide('workerdNatsUrl', nats.wsUrl);
  project.provide('workerdNatsMonitorUrl', nats.monitorUrl!);

  const pgAddress = new URL(databaseUrl(template));
  const proxy = await startWsProxy([`${pgAddress.hostname}:${pgAddress.port || 5432}`]);
  project.provide('wsProxyPort', proxy.port);

  return async () => {
    await proxy.close();
    await nats.stop();
    await rm(dir, { recursive: true, force: true });
    await dropTestDatabases();
  };
}

/**
 * Drops the databases this run made, and those of runs whose process is gone (a crashed
 * run); a concurrent run's databases are left alone. Names carry the run's pid.
 */
async function dropTestDatabases(): Promise<void> {
  const { rows } = await adminQuery(
    `SELECT datname FROM pg_database WHERE datname ~ '^leasehold_(tpl|t)_[0-9]+'`,
  );
  for (const { datname } of rows as { datname: string }[]) {
    const pid = Number(/^leasehold_(?:tpl|t)_(\d+)/.exec(datname)?.[1]);
    if (pid === process.pid || !alive(pid))
      await adminQuery(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
