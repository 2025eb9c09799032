import { sql } from 'drizzle-orm';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { connectPg } from '../../src/db/drivers/node-pg.js';
import { isDatabaseUnavailable } from '../../src/db/errors.js';
import { useTestDb } from '../helpers/db.js';
import { createEnvironment } from '../helpers/factories.js';

/** The error a statement fails with, through Drizzle as the library sees it. */
async function failure(run: () => PromiseLike<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (err) {
    return err;
  }
  throw new Error('the statement did not fail');
}

describe('isDatabaseUnavailable', () => {
  const t = useTestDb('pg');

  it('is true for a server that refuses connections', async () => {
    // Port 1: a privileged port nothing listens on here, so the connect is refused at once.
    const conn = connectPg('postgres://postgres@127.0.0.1:1/none', { acquireTimeoutMs: 2_000 });
    try {
      expect(isDatabaseUnavailable(await failure(() => conn.db.execute(sql`SELECT 1`)))).toBe(true);
    } finally {
      await conn.close();
    }
  });

  it('is true for a pool with no connection to spare within the acquire timeout', async () => {
    const conn = connectPg(t.url!, { max: 1, acquireTimeoutMs: 100 });
    const held = await conn.pool.connect();
    try {
      expect(isDatabaseUnavailable(await failure(() => conn.db.execute(sql`SELECT 1`)))).toBe(true);
    } finally {
      held.release();
      await conn.close();
    }
  });

  it('is true for a connection the server terminated', async () => {
    const client = new pg.Client({ connectionString: t.url! });
    client.on('error', () => {});
    await client.connect();
    const pid = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
    await t.db.execute(sql`SELECT pg_terminate_backend(${pid})`);
    try {
      expect(isDatabaseUnavailable(await failure(() => client.query('SELECT 1')))).toBe(true);
    } finally {
      await client.end().catch(() => {});
    }
  });

  it('is false for statements the database refused: a constraint or a syntax error', async () => {
    const env = await createEnvironment(t.db);
    const duplicate = await failure(() =>
      t.db.execute(
        sql`INSERT INTO environments (id, kind, name, config) VALUES (${env}, 'cloud', 'x', '{}')`,
      ),
    );
    expect(isDatabaseUnavailable(duplicate)).toBe(false);
    expect(isDatabaseUnavailable(await failure(() => t.db.execute(sql`SELEC 1`)))).toBe(false);
    expect(isDatabaseUnavailable(new Error('something else'))).toBe(false);
    expect(isDatabaseUnavailable(undefined)).toBe(false);
  });
});
