/**
 * The bench database: a fresh `leasehold_bench` on the local PostgreSQL, migrated for
 * Leasehold; the anchors install their own schemas beside it. Seeding is plain SQL
 * (generate_series, through the tests' factory), so a 100k backlog costs seconds, not a
 * minute of enqueues.
 */
import path from 'node:path';
import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { connectPg, migratePg } from '../../src/db/drivers/node-pg.js';
import type { WorkKind } from '../../src/queue/types.js';
import { seedClaimBacklog as seedItems } from '../../test/helpers/factories.js';

const MIGRATIONS = path.resolve(import.meta.dirname, '../../drizzle');
/** The database the bench owns (dropped and recreated each run); BENCH_DATABASE overrides it. */
export const BENCH_DATABASE = process.env.BENCH_DATABASE ?? 'leasehold_bench';
if (!/^[a-z_][a-z0-9_]*$/.test(BENCH_DATABASE))
  throw new Error(`BENCH_DATABASE must be a plain identifier: ${BENCH_DATABASE}`);

/** Where the bench connects as an administrator (to create its database). */
export function adminUrl(): string {
  return process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
}

export function benchUrl(): string {
  const url = new URL(adminUrl());
  url.pathname = `/${BENCH_DATABASE}`;
  return url.toString();
}

/** Drops and recreates the bench database and applies Leasehold's migrations. */
export async function prepareBenchDatabase(): Promise<string> {
  const admin = new pg.Client({ connectionString: adminUrl() });
  try {
    await admin.connect();
  } catch (err) {
    throw new Error(
      `the benchmark needs PostgreSQL at ${adminUrl()} (set BENCH_ADMIN_URL): ${(err as Error).message}`,
    );
  }
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${BENCH_DATABASE} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${BENCH_DATABASE}`);
  } finally {
    await admin.end();
  }
  const url = benchUrl();
  const conn = connectPg(url, { max: 1 });
  try {
    await migratePg(conn.db, MIGRATIONS, url);
  } finally {
    await conn.close();
  }
  return url;
}

/** Empties Leasehold's tables (anchors' schemas are theirs to reset). */
export async function resetLeasehold(client: pg.Pool | pg.Client): Promise<void> {
  await client.query('TRUNCATE work_items, worker_polls, sessions, environment_keys, environments CASCADE');
}

/**
 * Seeds `n` queued claim-lane items of `kind` (one session each, oldest first, the tests'
 * own factory) in a fresh cloud environment, then VACUUM ANALYZE so every subject starts
 * from settled statistics. Returns the environment id.
 */
export async function seedClaimBacklog(
  pool: pg.Pool,
  n: number,
  kind: WorkKind = 'model_turn',
): Promise<string> {
  const environmentId = await seedItems(drizzle({ client: pool }), n, kind);
  await pool.query('VACUUM ANALYZE work_items');
  await pool.query('VACUUM ANALYZE sessions');
  return environmentId;
}
