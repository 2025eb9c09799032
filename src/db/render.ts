/**
 * A Drizzle `sql` query as PostgreSQL text and parameters, rendered exactly as Drizzle's
 * PostgreSQL dialect renders it (`PgDialect.sqlToQuery`: `$n` parameters, double-quoted names,
 * single-quoted strings) without loading that dialect: the dialect module brings the query
 * builders, relations and column types with it, which Leasehold never uses (its statements
 * are `sql` templates), and which were a tenth of the Worker bundle.
 *
 * Leasehold's templates hold only text, nested templates, names, lists and plain values, and
 * those are walked here directly: Drizzle's own renderer asks every chunk of every statement
 * up to a dozen `is(…)` questions (each a walk of the chunk's prototype chain) and builds an
 * object per chunk to merge, which cost 3–4 µs a statement against ≈ 0.5 here, on every
 * statement the queue sends. A query holding anything else (a table, a column, a placeholder,
 * inlined parameters, an encoder's value) is handed to Drizzle's renderer whole, so the text
 * is Drizzle's either way. Only `sql` and `params` are produced: Drizzle's `typings` are read
 * by none of Leasehold's drivers.
 */
import { type BuildQueryConfig, Name, Param, SQL, StringChunk } from 'drizzle-orm';
import { CasingCache } from 'drizzle-orm/casing';

export interface RenderedQuery {
  sql: string;
  params: unknown[];
}

const escapeName = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** Built once: a fallback render uses it (Drizzle copies it, never changes it). */
const POSTGRES: BuildQueryConfig = {
  casing: new CasingCache(),
  escapeName,
  escapeParam: (num) => `$${num + 1}`,
  escapeString: (str) => `'${str.replace(/'/g, "''")}'`,
};

export function renderSql(query: SQL): RenderedQuery {
  // A fixed statement's query carries its rendering (`fixed-sql.ts`), made by this function.
  const { rendered } = query as { rendered?: RenderedQuery };
  if (rendered !== undefined && !(query as unknown as Inlinable).shouldInlineParams) return rendered;
  const out: RenderedQuery = { sql: '', params: [] };
  if (walk(query, out)) return out;
  const { sql, params } = query.toQuery(POSTGRES);
  return { sql, params };
}

/** `SQL.inlineParams()` sets it; Drizzle keeps it private. */
interface Inlinable {
  shouldInlineParams: boolean;
}

/** Appends `query` to `out`; false at the first chunk it does not know (`out` is then dropped). */
function walk(query: SQL, out: RenderedQuery): boolean {
  if ((query as unknown as Inlinable).shouldInlineParams) return false;
  for (const chunk of query.queryChunks) {
    if (!append(chunk, out)) return false;
  }
  return true;
}

function append(chunk: unknown, out: RenderedQuery): boolean {
  if (chunk === undefined) return true;
  if (primitive(chunk)) return bind(chunk, out);
  // Exact classes only: a subclass may render itself differently, so it goes to Drizzle.
  const proto = Object.getPrototypeOf(chunk);
  if (proto === StringChunk.prototype) {
    out.sql += (chunk as StringChunk).value.join('');
    return true;
  }
  if (proto === SQL.prototype) return walk(chunk as SQL, out);
  if (proto === Name.prototype) {
    out.sql += escapeName((chunk as Name).value);
    return true;
  }
  if (proto === Param.prototype) {
    // A placeholder (or any object) is Drizzle's to judge, whatever the encoder makes of it;
    // so is whatever an encoder makes that is not a plain value (a fragment, say).
    const { value, encoder } = chunk as Param;
    if (!primitive(value)) return false;
    const mapped = value === null ? null : encoder.mapToDriverValue(value);
    return primitive(mapped) && bind(mapped, out);
  }
  if (Array.isArray(chunk)) {
    out.sql += '(';
    for (let i = 0; i < chunk.length; i++) {
      if (i > 0) out.sql += ', ';
      if (!append(chunk[i], out)) return false;
    }
    out.sql += ')';
    return true;
  }
  return false;
}

/** A value Drizzle binds as it is: null, a string, a number, a boolean, a bigint. */
function primitive(value: unknown): boolean {
  return value === null || (typeof value !== 'object' && typeof value !== 'function');
}

function bind(value: unknown, out: RenderedQuery): true {
  out.params.push(value);
  out.sql += `$${out.params.length}`;
  return true;
}
