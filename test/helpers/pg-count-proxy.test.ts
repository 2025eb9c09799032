/**
 * The statement-counting proxy is an instrument (the benchmarks' idle counts rest on it): it
 * must count what clients run, and file each statement under its SQL whether it came as a
 * simple query, an unnamed extended-protocol statement or a named one prepared once and run
 * again without its text.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb, type TestDb } from './db.js';
import { type CountProxy, startCountProxy } from './pg-count-proxy.js';

describe('pg count proxy', () => {
  let db: TestDb;
  let proxy: CountProxy;
  let client: pg.Client;

  beforeAll(async () => {
    db = await openTestDb('pg');
    const target = new URL(db.url!);
    proxy = await startCountProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const proxied = new URL(db.url!);
    proxied.host = proxy.address;
    client = new pg.Client({ connectionString: proxied.toString() });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await proxy?.close();
    await db?.close();
  });

  it('files every statement under its SQL: simple, unnamed and named prepared ones run again by name', async () => {
    const before = proxy.statements();
    const named = { name: 'count_proxy_named', text: 'SELECT $1::int + 1 AS named_one' };
    await client.query('SELECT 1 AS simple_one');
    await client.query('SELECT $1::int AS unnamed_one', [1]);
    await client.query('SELECT $1::int AS unnamed_one', [2]);
    // The second run sends no Parse: only the statement's name.
    await client.query({ ...named, values: [1] });
    await client.query({ ...named, values: [2] });
    await client.query({ ...named, values: [3] });

    expect(proxy.statements() - before).toBe(6);
    expect(proxy.statementsWhere((sql) => sql.includes('simple_one'))).toBe(1);
    expect(proxy.statementsWhere((sql) => sql.includes('unnamed_one'))).toBe(2);
    expect(proxy.statementsWhere((sql) => sql.includes('named_one') && !sql.includes('unnamed'))).toBe(3);
    expect(proxy.statementsWhere(() => false)).toBe(0);
  });
});
