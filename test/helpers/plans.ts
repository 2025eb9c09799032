/**
 * The generic plan PostgreSQL would run a queue statement with once it is prepared: after
 * five executions a prepared statement may switch to a plan made without its parameters,
 * from the table's statistics alone, and those are stale in the middle of a drain (analyzed
 * when nothing was active). A statement whose generic plan scans the whole table is a trap
 * that only shows under load; these helpers let a test look at that plan directly.
 */
import { type SQL, sql } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import type pg from 'pg';
import { type Database, rows, type SqlHandle } from '../../src/db/handle.js';

/**
 * Every `sql` query `op` sends, in order, taken by a handle that answers each with `answer`
 * and runs nothing. What `op` then makes of the answer (it may throw) does not matter here.
 */
export async function sentQueries(
  op: (db: SqlHandle) => Promise<unknown>,
  answer: unknown[] = [],
): Promise<SQL[]> {
  const sent: SQL[] = [];
  const recorder: SqlHandle = {
    execute: (q) => {
      sent.push(q);
      return Promise.resolve({ rows: answer });
    },
  };
  await op(recorder).catch(() => {});
  return sent;
}

/** The first `sql` query `op` sends (`sentQueries`). */
export async function sentQuery(
  op: (db: SqlHandle) => Promise<unknown>,
  answer: unknown[] = [],
): Promise<SQL> {
  const [query] = await sentQueries(op, answer);
  if (!query) throw new Error('the operation sent no statement');
  return query;
}

/** The statement `op` sends, rendered, captured by a handle that answers with `answer` and runs nothing. */
export async function capture(
  op: (db: SqlHandle) => Promise<unknown>,
  answer: unknown[] = [],
): Promise<{ sql: string; params: unknown[] }> {
  return new PgDialect().sqlToQuery(await sentQuery(op, answer));
}

function literal(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return `'${value.replaceAll("'", "''")}'`;
  throw new Error(`cannot inline a ${typeof value} parameter`);
}

/** EXPLAIN of the generic plan of `statement` on a connection of `pool`. */
export async function genericPlan(
  pool: pg.Pool,
  statement: { sql: string; params: unknown[] },
): Promise<string> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
    await client.query(`PREPARE generic_plan_probe AS ${statement.sql}`);
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN EXECUTE generic_plan_probe(${statement.params.map(literal).join(', ')})`,
    );
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  } finally {
    await client.query('ROLLBACK');
    // A prepared statement outlives its transaction; only this one goes (the pooled connection
    // keeps the driver's own, which it still believes it has).
    await client.query('DEALLOCATE generic_plan_probe').catch(() => {});
    client.release();
  }
}

/**
 * What `op` cost in rows of `work_items` read through an index (each one a visit to the
 * table: PostgreSQL's own per-transaction count), with its result. It runs in a transaction
 * of its own, so only its statements are counted.
 */
export async function workRowsFetched<T>(
  db: Database,
  op: (tx: SqlHandle) => Promise<T>,
): Promise<{ fetched: number; result: T }> {
  const count = async (tx: SqlHandle) => {
    const [row] = await rows<{ n: number }>(
      tx,
      // Counted per index for index scans, on the table itself for bitmap heap scans.
      sql`SELECT (pg_stat_get_xact_tuples_fetched('work_items'::regclass)
                  + (SELECT coalesce(sum(pg_stat_get_xact_tuples_fetched(indexrelid)), 0)
                       FROM pg_index WHERE indrelid = 'work_items'::regclass))::int AS n`,
    );
    return row!.n;
  };
  return db.transaction(async (tx) => {
    const before = await count(tx);
    const result = await op(tx);
    return { fetched: (await count(tx)) - before, result };
  });
}
