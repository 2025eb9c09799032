/**
 * Postgres error codes the library reacts to. Drivers differ in how they surface a server
 * error (a `pg` DatabaseError, a Neon error, a PGlite error, each sometimes wrapped by
 * Drizzle as `cause`), but all carry the SQLSTATE in `code`.
 */
export const PG_FOREIGN_KEY_VIOLATION = '23503';

/** The SQLSTATE of a database error, looking through Drizzle's wrapping; undefined if none. */
export function pgCode(err: unknown): string | undefined {
  return field(err, 'code', (v) => /^[0-9A-Z]{5}$/.test(v));
}

/** The server's DETAIL of a database error (e.g. the key a constraint refused); undefined if none. */
export function pgDetail(err: unknown): string | undefined {
  return field(err, 'detail', () => true);
}

function field(err: unknown, name: 'code' | 'detail', valid: (value: string) => boolean): string | undefined {
  for (const e of causes(err)) {
    const value = e[name];
    if (typeof value === 'string' && valid(value)) return value;
  }
  return undefined;
}

/** The error and what it wraps (`cause`), a few levels deep: Drizzle and drivers nest them. */
function* causes(err: unknown): Generator<Record<string, unknown>> {
  let e: unknown = err;
  for (let depth = 0; depth < 4 && e !== null && typeof e === 'object'; depth++) {
    yield e as Record<string, unknown>;
    e = (e as { cause?: unknown }).cause;
  }
}

/**
 * SQLSTATEs that say the database is away or refusing work for now, not that the request
 * was wrong: connection exceptions (class 08), too many connections, and a server shutting
 * down, starting up or crashed (57P01–57P03).
 */
const UNAVAILABLE_STATES = /^(08...|53300|57P01|57P02|57P03)$/;
/** Socket errors of a connection that failed or broke. */
const UNAVAILABLE_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);
/**
 * What `pg` (and the Neon driver, which shares its client) says without a code when a pooled
 * connection could not be had in time, or broke under a query.
 */
const UNAVAILABLE_MESSAGES =
  /^(timeout exceeded when trying to connect|Connection terminated|Client has encountered a connection error|Client was closed and is not queryable|Query read timeout)/;

/**
 * True when a failure means "the database cannot be reached right now" — worth a 503 and a
 * retry — rather than a bug or a refused statement. Looks through Drizzle's wrapping.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (const { code, message } of causes(err)) {
    if (typeof code === 'string' && (UNAVAILABLE_STATES.test(code) || UNAVAILABLE_ERRNOS.has(code)))
      return true;
    if (typeof message === 'string' && UNAVAILABLE_MESSAGES.test(message)) return true;
  }
  return false;
}
