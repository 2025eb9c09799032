/**
 * The Node entry's lifecycle (`functions/node.ts` through scripts/launch.mjs, as `npm start` runs it): bad
 * configuration stops it before it touches anything, and SIGTERM drains it — a long poll in
 * flight is answered, the database connections are closed, and the process exits 0.
 *
 * Process lifecycle is the subject here, so these tests wait on real processes (bounded).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueEnvironmentKey } from '../../src/auth/credentials.js';
import { maybeRow } from '../../src/db/handle.js';
import { openTestDb, type TestDb } from '../helpers/db.js';
import { createEnvironment } from '../helpers/factories.js';
import { ENTRY, LAUNCH, type RunningServer, serverEnvironment, startServer } from '../helpers/server.js';

/** How far into the long poll's wait the signal is sent. */
const SIGNAL_AFTER_MS = 100;
/** How long the SDK's fetch (undici) keeps an idle socket open. */
const KEEP_ALIVE_MS = 4_000;
/** How long a refused start may take (a changed source is bundled first). */
const EXIT_TIMEOUT_MS = 30_000;

interface Exit {
  code: number | null;
  stderr: string;
}

/** Runs the Node entry with `settings` (and nothing else the server reads) in `cwd` until it exits. */
function runToExit(settings: Record<string, string>, cwd: string): Promise<Exit> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [LAUNCH, ENTRY],
      { cwd, env: { ...serverEnvironment(), ...settings }, timeout: EXIT_TIMEOUT_MS },
      (err, _stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stderr }),
    );
  });
}

describe('bad configuration', () => {
  let cwd: string;
  beforeAll(async () => {
    cwd = await mkdtemp(path.join(tmpdir(), 'leasehold-badconfig-'));
  });
  afterAll(async () => {
    await rm(cwd, { recursive: true, force: true });
  });

  it.each([
    ['PORT', { PORT: 'abc' }],
    ['DATABASE_URL', { DATABASE_URL: 'mysql://leasehold:s3cret-password@db.example/queue' }],
    ['NATS_URL', { NATS_URL: 'http://127.0.0.1:4222' }],
    ['LEASEHOLD_JOURNAL_REPLICAS', { LEASEHOLD_JOURNAL_REPLICAS: '7' }],
  ])(
    'a bad %s stops the start with exit code 1 and a message naming it, before anything is created',
    async (name, settings) => {
      const { code, stderr } = await runToExit(settings, cwd);
      expect(code).toBe(1);
      expect(stderr).toContain('[leasehold] configuration error:');
      expect(stderr).toContain(name);
      // The message names the setting without echoing a connection string.
      expect(stderr).not.toContain('s3cret-password');
      expect(await readdir(cwd)).toEqual([]);
    },
  );
});

describe('SIGTERM', () => {
  let t: TestDb;
  let server: RunningServer;
  beforeAll(async () => {
    // One connection of the test's own: every other connection to the database is the server's.
    t = await openTestDb('pg', { poolSize: 1 });
    server = await startServer({ databaseUrl: t.url! });
  });
  afterAll(async () => {
    await server?.stop();
    await t?.close();
  });

  const serverConnections = async () => {
    const row = await maybeRow<{ n: number }>(
      t.db,
      sql`SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE datname = current_database() AND pid <> pg_backend_pid()`,
    );
    return row!.n;
  };

  it("during a long poll answers the poll (200 null), closes every database connection and exits 0, without waiting out the client's keep-alive", async () => {
    const environmentId = await createEnvironment(t.db, 'self_hosted');
    const { key } = await issueEnvironmentKey(t.db, environmentId, 'lifecycle', null);
    // No retries: the answer must come from the request that was in flight at the signal.
    const work = new Anthropic({ apiKey: key, baseURL: server.baseURL, maxRetries: 0 }).beta.environments
      .work;
    expect(await serverConnections()).toBeGreaterThan(0);

    const sentAt = Date.now();
    const answer = work.poll(environmentId, { block_ms: 999 }).then((value) => ({ value, at: Date.now() }));
    await new Promise((r) => setTimeout(r, SIGNAL_AFTER_MS));
    // The server's process only, as a process manager running `npm start` signals it.
    process.kill(server.pid, 'SIGTERM');
    const signalledAt = Date.now();

    const { value, at } = await answer;
    expect(value).toBe(null);
    expect(at).toBeGreaterThan(signalledAt);
    // The poll was held for its whole block, not cut short by the drain.
    expect(at - sentAt).toBeGreaterThanOrEqual(990);
    expect(await server.exited).toBe(0);
    // The client keeps its socket alive for 4 s; the drain must close it, not wait that out.
    expect(Date.now() - at).toBeLessThan(KEEP_ALIVE_MS / 2);
    expect(server.output()).toContain('SIGTERM: draining');
    expect(await serverConnections()).toBe(0);
  });
});
