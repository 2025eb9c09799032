/**
 * Where the tests find PostgreSQL, and a clear failure when it is not there: a missing
 * service must fail the run, never skip tests.
 */
import pg from 'pg';

/** A maintenance database on the test server; per-file databases are created from it. */
export const ADMIN_URL =
  process.env.LEASEHOLD_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export function databaseUrl(name: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function adminQuery(text: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
  } catch (err) {
    throw new Error(
      `PostgreSQL is not reachable at ${redact(ADMIN_URL)} (${(err as Error).message}). ` +
        'The tests need a real PostgreSQL: start it (see docs/testing.md) or set LEASEHOLD_TEST_DATABASE_URL.',
    );
  }
  try {
    return await client.query(text);
  } finally {
    await client.end();
  }
}

function redact(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}
