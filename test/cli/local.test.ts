/**
 * The commands that do not go through the API: `migrate` against a fresh PostgreSQL database,
 * `serve` as a real process on a free port, answering until SIGTERM drains it, and `brain`,
 * which refuses to start without its settings and otherwise runs until SIGTERM drains it.
 */
import { once } from 'node:events';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useNatsServer } from '../helpers/nats.js';
import { adminQuery, databaseUrl } from '../helpers/postgres.js';
import { ROOT } from '../helpers/server.js';
import { deadPort, leasehold, leaseholdJson, spawnLeasehold } from './run-bin.js';

/** How long `serve` may take to answer its first request. */
const SERVE_START_MS = 20_000;

describe('leasehold migrate, serve and brain', () => {
  const name = `leasehold_cli_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const url = databaseUrl(name);

  const nats = useNatsServer();

  beforeAll(async () => {
    await adminQuery(`CREATE DATABASE ${name}`);
  });
  afterAll(async () => {
    await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  });

  it('migrate applies every migration to an empty database, and again is a no-op', async () => {
    const first = await leasehold(['migrate', '--database-url', url]);
    expect(first).toMatchObject({ code: 0, stdout: 'migrations applied\n' });
    expect(await leaseholdJson(['migrate'], { DATABASE_URL: url })).toEqual({ migrated: true });
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const tables = await client.query(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
      );
      expect(tables.rows.map((r) => r.table_name)).toEqual(
        expect.arrayContaining(['api_keys', 'environments', 'work_items']),
      );
    } finally {
      await client.end();
    }
  });

  it('migrate fails with one line and exit 1 when the database does not exist', async () => {
    const missing = await leasehold(['migrate', '--database-url', databaseUrl(`${name}_missing`)]);
    expect(missing).toEqual({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(/^leasehold: [^\n]*does not exist\n$/),
    });
  });

  it('serve runs the server on PORT until SIGTERM, which it drains and exits 0', async () => {
    const port = await deadPort();
    const adminKey = `lh_cli_admin_${Math.random().toString(36).slice(2)}`;
    const child = spawnLeasehold(['serve'], {
      DATABASE_URL: url,
      PORT: String(port),
      LEASEHOLD_ADMIN_KEY: adminKey,
      LEASEHOLD_HOUSEKEEPING_EVERY_MS: '0',
    });
    let output = '';
    child.stderr.on('data', (c: Buffer) => {
      output += c.toString();
    });
    const exited = once(child, 'exit') as Promise<[number | null, string | null]>;
    try {
      const deadline = Date.now() + SERVE_START_MS;
      while (!output.includes('listening on')) {
        if (Date.now() > deadline || child.exitCode !== null)
          throw new Error(`serve did not start:\n${output}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const list = await leaseholdJson<{ data: unknown[] }>(['env', 'list'], {
        LEASEHOLD_URL: `http://127.0.0.1:${port}`,
        LEASEHOLD_KEY: adminKey,
      });
      expect(list.data).toEqual([]);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toEqual([0, null]);
    expect(output).toContain('SIGTERM: draining');
  });

  it('brain without DATABASE_URL, NATS_URL or LEASEHOLD_MODEL exits 1 with one line naming each', async () => {
    const refused = await leasehold(['brain']);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    const lines = refused.stderr.trim().split('\n');
    expect(lines).toHaveLength(3);
    for (const [i, name] of ['DATABASE_URL', 'NATS_URL', 'LEASEHOLD_MODEL'].entries()) {
      expect(lines[i]).toMatch(
        new RegExp(`^\\[leasehold\\] configuration error: the brain needs ${name}\\b`),
      );
    }
  });

  it('brain runs its turn slots on the database and the journal until SIGTERM, which it drains and exits 0', async () => {
    const child = spawnLeasehold(['brain'], {
      DATABASE_URL: url,
      NATS_URL: nats.wsUrl,
      LEASEHOLD_MODEL: `scripted:${ROOT}/examples/session-script.json`,
      LEASEHOLD_BRAIN_SLOTS: '3',
    });
    let output = '';
    child.stderr.on('data', (c: Buffer) => {
      output += c.toString();
    });
    const exited = once(child, 'exit') as Promise<[number | null, string | null]>;
    try {
      const deadline = Date.now() + SERVE_START_MS;
      while (!output.includes('turn slots')) {
        if (Date.now() > deadline || child.exitCode !== null)
          throw new Error(`brain did not start:\n${output}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(output).toContain('brain: 3 turn slots');
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toEqual([0, null]);
    expect(output).toContain('SIGTERM: draining');
  });
});
