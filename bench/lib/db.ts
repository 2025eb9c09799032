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
export function prepareBenchDatabase(): Promise<string> {
  return prepareDatabase(BENCH_DATABASE);
}

/**
 * A second migrated database beside the bench's own, `<bench>_<suffix>`, for a dataset that
 * must outlive the resets of the main one (a large backlog built once); `dropSideDatabase` ends it.
 */
export function prepareSideDatabase(suffix: string): Promise<string> {
  return prepareDatabase(sideName(suffix));
}

export async function dropSideDatabase(suffix: string): Promise<void> {
  await asAdmin((admin) => admin.query(`DROP DATABASE IF EXISTS ${sideName(suffix)} WITH (FORCE)`));
}

function sideName(suffix: string): string {
  if (!/^[a-z0-9_]+$/.test(suffix))
    throw new Error(`a side database suffix must be a plain identifier: ${suffix}`);
  return `${BENCH_DATABASE}_${suffix}`;
}

async function asAdmin(run: (admin: pg.Client) => Promise<unknown>): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl() });
  try {
    await admin.connect();
  } catch (err) {
    throw new Error(
      `the benchmark needs PostgreSQL at ${adminUrl()} (set BENCH_ADMIN_URL): ${(err as Error).message}`,
    );
  }
  try {
    await run(admin);
  } finally {
    await admin.end();
  }
}

async function prepareDatabase(name: string): Promise<string> {
  await asAdmin(async (admin) => {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name}`);
  });
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  const conn = connectPg(url.toString(), { max: 1 });
  try {
    await migratePg(conn.db, MIGRATIONS, url.toString());
  } finally {
    await conn.close();
  }
  return url.toString();
}

/** Empties Leasehold's tables (anchors' schemas are theirs to reset). */
export async function resetLeasehold(client: pg.Pool | pg.Client): Promise<void> {
  await client.query('TRUNCATE work_items, worker_polls, sessions, environment_keys, environments CASCADE');
}

/**
 * Seeds `n` queued claim-lane items of `kind` (one session each, oldest first, the tests'
 * own factory) in a fresh cloud environment, then VACUUM ANALYZE so every subject starts
 * from settled statistics. Returns the environment id.
 *
 * The seed's own rows reference only each other, so its connection skips the foreign-key
 * triggers (`session_replication_role = replica`, where the role may set it): a third of a
 * million-item seed's time went to checking what it had just inserted. The rows, indexes and
 * constraints are the same either way; only building them is faster. The role skips every
 * trigger, not only the foreign keys', so it is used only while the seeded tables have none
 * of their own.
 */
export async function seedClaimBacklog(
  pool: pg.Pool,
  n: number,
  kind: WorkKind = 'model_turn',
): Promise<string> {
  const client = await pool.connect();
  let environmentId: string;
  try {
    const { rows } = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_trigger
        WHERE tgrelid IN ('work_items'::regclass, 'sessions'::regclass, 'environments'::regclass)
          AND NOT tgisinternal`,
    );
    if (rows[0]!.n === 0) await client.query('SET session_replication_role = replica').catch(() => {});
    try {
      environmentId = await seedItems(drizzle({ client }), n, kind);
    } finally {
      await client.query('RESET session_replication_role');
    }
  } finally {
    client.release();
  }
  await pool.query('VACUUM ANALYZE work_items');
  await pool.query('VACUUM ANALYZE sessions');
  return environmentId;
}

/**
 * Puts back every item a drain took from a `seedClaimBacklog` backlog — queued, never
 * claimed — and settles the table again, so a backlog too large to seed per measurement is
 * built once and reused. The rows taken were the oldest, and they go back under their own
 * ids and creation times, so the next drain takes the same items in the same order.
 */
export async function restoreClaimBacklog(pool: pg.Pool): Promise<void> {
  await pool.query(
    `UPDATE work_items SET state = 'queued', lease_expires_at = NULL, stopped_at = NULL, claims = 0, updated_at = now()
      WHERE state <> 'queued'`,
  );
  await pool.query('VACUUM ANALYZE work_items');
}
