/**
 * A Drizzle `sql` query as PostgreSQL text and parameters, rendered exactly as Drizzle's
 * PostgreSQL dialect renders it (`PgDialect.sqlToQuery`: `$n` parameters, double-quoted names,
 * single-quoted strings) without loading that dialect: the dialect module brings the query
 * builders, relations and column types with it, which Leasehold never uses (its statements
 * are `sql` templates), and which were a tenth of the Worker bundle.
 */
import type { BuildQueryConfig, SQL } from 'drizzle-orm';
import { CasingCache } from 'drizzle-orm/casing';

export interface RenderedQuery {
  sql: string;
  params: unknown[];
}

/** Built once: every statement renders with it (Drizzle copies it, never changes it). */
const POSTGRES: BuildQueryConfig = {
  casing: new CasingCache(),
  escapeName: (name) => `"${name.replace(/"/g, '""')}"`,
  escapeParam: (num) => `$${num + 1}`,
  escapeString: (str) => `'${str.replace(/'/g, "''")}'`,
};

export function renderSql(query: SQL): RenderedQuery {
  return query.toQuery(POSTGRES);
}
