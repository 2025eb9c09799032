/**
 * A Drizzle `sql` query as PostgreSQL text and parameters, rendered exactly as Drizzle's
 * PostgreSQL dialect renders it (`PgDialect.sqlToQuery`: `$n` parameters, double-quoted names,
 * single-quoted strings) without loading that dialect: the dialect module brings the query
 * builders, relations and column types with it, which Leasehold never uses (its statements
 * are `sql` templates), and which were a tenth of the Worker bundle.
 */
import type { SQL } from 'drizzle-orm';
import { CasingCache } from 'drizzle-orm/casing';

const casing = new CasingCache();

export interface RenderedQuery {
  sql: string;
  params: unknown[];
}

export function renderSql(query: SQL): RenderedQuery {
  return query.toQuery({
    casing,
    escapeName: (name) => `"${name.replace(/"/g, '""')}"`,
    escapeParam: (num) => `$${num + 1}`,
    escapeString: (str) => `'${str.replace(/'/g, "''")}'`,
  });
}
