/**
 * Postgres error codes the library reacts to. Drivers differ in how they surface a server
 * error (a `pg` DatabaseError, a Neon error, a PGlite error, each sometimes wrapped by
 * Drizzle as `cause`), but all carry the SQLSTATE in `code`.
 */
export const PG_FOREIGN_KEY_VIOLATION = '23503';
export const PG_UNIQUE_VIOLATION = '23505';

/** The SQLSTATE of a database error, looking through Drizzle's wrapping; undefined if none. */
export function pgCode(err: unknown): string | undefined {
  return field(err, 'code', (v) => /^[0-9A-Z]{5}$/.test(v));
}

/** The server's DETAIL of a database error (e.g. the key a constraint refused); undefined if none. */
export function pgDetail(err: unknown): string | undefined {
  return field(err, 'detail', () => true);
}

function field(err: unknown, name: 'code' | 'detail', valid: (value: string) => boolean): string | undefined {
  let e: unknown = err;
  for (let depth = 0; depth < 4 && e !== null && typeof e === 'object'; depth++) {
    const value = (e as Record<string, unknown>)[name];
    if (typeof value === 'string' && valid(value)) return value;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}
