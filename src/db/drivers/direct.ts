/**
 * `Database` straight over a `pg`-shaped pool (the Neon serverless Pool on Workers): each
 * `execute` renders its query (`renderSql`) and sends it with the types Drizzle's sessions
 * use, its failures wrapped as Drizzle wraps them — the same rows and the same errors as a
 * Drizzle database over that pool, without Drizzle's query builders and sessions in the
 * bundle. A transaction holds one pooled connection from BEGIN to COMMIT or ROLLBACK.
 */
import { type SQL, sql } from 'drizzle-orm';
import { DrizzleQueryError } from 'drizzle-orm/errors';
import type { Database, SqlHandle } from '../handle.js';
import { renderSql } from '../render.js';

/**
 * The type ids Drizzle's sessions hand back as the server's text: timestamps, dates, intervals,
 * and their arrays (the list in `drizzle-orm/node-postgres/session.js` and
 * `neon-serverless/session.js`, to be checked again on an upgrade of drizzle-orm).
 */
export const AS_TEXT_TYPES: ReadonlySet<number> = new Set([
  1184, // timestamptz
  1114, // timestamp
  1082, // date
  1186, // interval
  1115, // timestamp[]
  1182, // date[]
  1185, // timestamptz[]
  1187, // interval[]
  1231, // numeric[]
]);

/** How a driver turns a column of type `id` into a value. */
export interface QueryTypes {
  getTypeParser(id: number, format?: string): (value: string) => unknown;
}

interface QueryConfig {
  text: string;
  values: unknown[];
  types: QueryTypes;
}

/** What this module needs of a connection: pg's `query(config)`. */
export interface Queryable {
  query(config: QueryConfig): Promise<unknown>;
}

/** What it needs of a pool: a query, and a connection of its own for a transaction. */
export interface QueryPool extends Queryable {
  connect(): Promise<Queryable & { release(destroy?: boolean): void }>;
}

/** `getTypeParser` of the driver's own type registry (`types.getTypeParser` of pg or Neon). */
export type TypeParsers = (id: number, format?: string) => (value: string) => unknown;

/** The type parsers Drizzle's sessions use: `parsers`, but the `AS_TEXT_TYPES` left as text. */
export function drizzleTypes(parsers: TypeParsers): QueryTypes {
  return { getTypeParser: (id, format) => (AS_TEXT_TYPES.has(id) ? asText : parsers(id, format)) };
}

const asText = (value: string) => value;

/**
 * `execute` on one connection or pool: the query rendered once and sent with `types`
 * (`drizzleTypes`), failures wrapped as Drizzle wraps them. Drizzle's own path builds a
 * prepared-query object with two type-parser configs, tracing spans and a cache lookup for
 * every statement; the Node server's `pg` handle sends its raw queries through this too.
 */
export function directExecute(conn: Queryable, types: QueryTypes): (query: SQL) => Promise<unknown> {
  return async (query) => {
    const { sql: text, params } = renderSql(query);
    try {
      return await conn.query({ text, values: params, types });
    } catch (err) {
      throw new DrizzleQueryError(text, params, err as Error);
    }
  };
}

export function directDatabase(pool: QueryPool, parsers: TypeParsers): Database {
  // Built once: every statement, in or out of a transaction, is sent with the same types.
  const types = drizzleTypes(parsers);
  return {
    execute: directExecute(pool, types),
    async transaction<T>(fn: (tx: SqlHandle) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      const run = directExecute(client, types);
      let broken = false;
      try {
        await run(sql`begin`);
        const result = await fn({ execute: run });
        await run(sql`commit`);
        return result;
      } catch (err) {
        // A connection that cannot even roll back is not given back to the pool.
        await run(sql`rollback`).catch(() => {
          broken = true;
        });
        throw err;
      } finally {
        client.release(broken);
      }
    },
  };
}
