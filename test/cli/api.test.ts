/**
 * The real binary against the real Node server (PostgreSQL): every API command, its table for
 * people, its `--json` parsed, and the one-line failures — bad key (401), unknown id (404),
 * server down (exit 3). One server and one database for the file; nothing is reset between
 * tests (that would delete the server's admin key), so each test makes what it uses.
 */
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb, type TestDb } from '../helpers/db.js';
import { type RunningServer, startServer } from '../helpers/server.js';
import { deadPort, leasehold, leaseholdJson, spawnLeasehold } from './run-bin.js';

interface Env {
  id: string;
  name: string;
  config: { type: string };
  archived_at: string | null;
}
interface Key {
  id: string;
  key: string;
  name: string;
  scope?: string;
}
interface Enqueued {
  created: boolean;
  work: { id: string; state: string; kind: string; data: { id: string } };
}

/**
 * A test here runs up to fifteen binary calls, each a fresh process; on two cores shared with
 * other test files that has run past the default 30 s. Each call keeps its own 20 s bound
 * (run-bin.ts).
 */
const MANY_CALLS_MS = 120_000;

describe('leasehold against the Node server', { timeout: MANY_CALLS_MS }, () => {
  let db: TestDb;
  let server: RunningServer;
  let admin: Record<string, string>;

  beforeAll(async () => {
    db = await openTestDb('pg');
    server = await startServer({ databaseUrl: db.url! });
    admin = { LEASEHOLD_URL: server.baseURL, LEASEHOLD_KEY: server.adminKey };
  });
  afterAll(async () => {
    await server?.stop();
    await db?.close();
  });

  /** A self_hosted environment and a key for it, made with the CLI itself. */
  async function environment(name: string) {
    const env = await leaseholdJson<Env>(['env', 'create', name], admin);
    const key = await leaseholdJson<Key>(['key', 'create', env.id, `${name}-worker`], admin);
    return { env, key, envKey: { LEASEHOLD_URL: server.baseURL, LEASEHOLD_KEY: key.key } };
  }

  it('env create|list|archive: the table shows what matters and --json is the API document', async () => {
    const created = await leasehold(
      ['env', 'create', 'billing', '--description', 'the billing agents'],
      admin,
    );
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(
      /^id\s+env_\w+\nname\s+billing\ntype\s+self_hosted\ndescription\s+the billing agents\n/,
    );
    const cloud = await leaseholdJson<Env>(['env', 'create', 'web', '--type', 'cloud'], admin);
    expect(cloud).toMatchObject({
      type: 'environment',
      name: 'web',
      config: { type: 'cloud' },
      archived_at: null,
    });

    const archived = await leaseholdJson<Env>(['env', 'archive', cloud.id], admin);
    expect(archived.archived_at).not.toBeNull();
    const [table, live, all] = await Promise.all([
      leasehold(['env', 'list'], admin),
      leaseholdJson<{ data: Env[]; next_page: string | null }>(['env', 'list'], admin),
      leaseholdJson<{ data: Env[] }>(['env', 'list', '--all', '--limit', '100'], admin),
    ]);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+TYPE\s+CREATED\s+ARCHIVED$/);
    expect(table.stdout).toMatch(/env_\w+\s+billing\s+self_hosted\s+\S+\s+-\n/);
    expect(live.data.map((e) => e.name)).not.toContain('web');
    expect(all.data.find((e) => e.id === cloud.id)?.archived_at).toBe(archived.archived_at);
  });

  it('key create|list|revoke: the secret is printed once, lists never show it, a revoked key is 401', async () => {
    const { env, key, envKey } = await environment('keys');
    expect(key.key).toMatch(/\S{20,}/);
    const human = await leasehold(['key', 'create', env.id, 'second', '--expires-in', '3600'], admin);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^secret\s+\S{20,}$/m);
    expect(human.stderr).toContain('shown once');

    const list = await leaseholdJson<{ data: Key[] }>(['key', 'list', env.id], admin);
    expect(list.data.map((k) => k.name).sort()).toEqual(['keys-worker', 'second']);
    expect(JSON.stringify(list)).not.toContain(key.key);
    expect((await leasehold(['key', 'list', env.id], admin)).stdout).toMatch(/keys-worker\s+\S+\s+never/);

    expect(await leaseholdJson(['key', 'revoke', env.id, key.id], admin)).toEqual({
      id: key.id,
      revoked: true,
    });
    const refused = await leasehold(['work', 'list', env.id], envKey);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/^leasehold: 401 authentication_error: [^\n]+\n$/);
  });

  it('api-key create|list|revoke: a platform key works on the platform lane until revoked', async () => {
    const issued = await leaseholdJson<Key>(
      ['api-key', 'create', 'platform-fn', '--scope', 'platform'],
      admin,
    );
    expect(issued).toMatchObject({ type: 'api_key', name: 'platform-fn', scope: 'platform' });
    const list = await leasehold(['api-key', 'list'], admin);
    expect(list.stdout).toMatch(new RegExp(`${issued.id}\\s+platform-fn\\s+platform`));

    const platform = { LEASEHOLD_URL: server.baseURL, LEASEHOLD_KEY: issued.key };
    expect((await leasehold(['session', 'cancel', 'nobody'], platform)).stdout).toBe(
      'stopped 0 items of nobody\n',
    );
    expect((await leasehold(['api-key', 'revoke', issued.id], admin)).stdout).toBe(`revoked ${issued.id}\n`);
    const refused = await leasehold(['session', 'cancel', 'nobody'], platform);
    expect([refused.code, refused.stderr]).toEqual([1, expect.stringMatching(/^leasehold: 401 [^\n]+\n$/)]);
  });

  it('enqueue, stats, work list|get|stop and session cancel follow one item through the queue', async () => {
    const { env, envKey } = await environment('queue');
    const first = await leaseholdJson<Enqueued>(['enqueue', env.id, 'sess-a', '--meta', 'ticket=T-1'], admin);
    expect(first).toMatchObject({
      created: true,
      work: { state: 'queued', kind: 'tool_exec', data: { id: 'sess-a' } },
    });
    const again = await leasehold(['enqueue', env.id, 'sess-a'], admin);
    expect(again.stdout).toMatch(new RegExp(`${first.work.id}\\s+sess-a\\s+tool_exec\\s+queued\\s+existing`));

    // --count: one item per numbered session, progress on stderr when asked for.
    const many = await leasehold(['enqueue', env.id, 'batch', '--count', '3', '--progress', '--json'], admin);
    expect(many.code).toBe(0);
    expect((JSON.parse(many.stdout) as { data: Enqueued[] }).data.map((r) => r.work.data.id)).toEqual([
      'batch-1',
      'batch-2',
      'batch-3',
    ]);
    expect(many.stderr).toBe('enqueued 1/3\nenqueued 2/3\nenqueued 3/3\n');

    const [stats, statsTable, list, listTable, got] = await Promise.all([
      leaseholdJson<{ depth: number; pending: number }>(['stats', env.id], envKey),
      leasehold(['stats', env.id], admin),
      leaseholdJson<{ data: { id: string }[]; next_page: string | null }>(
        ['work', 'list', env.id, '--limit', '2'],
        envKey,
      ),
      leasehold(['work', 'list', env.id], envKey),
      leaseholdJson<{ id: string; metadata: Record<string, string> }>(
        ['work', 'get', env.id, first.work.id],
        admin,
      ),
    ]);
    expect(stats).toMatchObject({ type: 'work_queue_stats', depth: 4, pending: 0 });
    expect(statsTable.stdout).toMatch(
      /^DEPTH\s+PENDING\s+OLDEST QUEUED\s+WORKERS POLLING\n4\s+0\s+\S+\s+0\n$/,
    );
    expect(list.data).toHaveLength(2);
    expect(list.next_page).toEqual(expect.any(String));
    expect(listTable.stdout.trim().split('\n')).toHaveLength(5);
    expect(listTable.stdout).toContain(first.work.id);
    expect(got).toMatchObject({ id: first.work.id, metadata: { ticket: 'T-1' } });
    const gotTable = await leasehold(['work', 'get', env.id, first.work.id], admin);
    expect(gotTable.stdout).toMatch(/^state\s+queued$/m);
    expect(gotTable.stdout).toMatch(/^metadata\.ticket\s+T-1$/m);

    expect(await leaseholdJson(['work', 'stop', env.id, first.work.id, '--force'], admin)).toMatchObject({
      id: first.work.id,
      state: 'stopped',
      stop_requested_at: expect.any(String),
      stopped_at: expect.any(String),
    });
    const twice = await leasehold(['work', 'stop', env.id, first.work.id], envKey);
    expect([twice.code, twice.stderr]).toEqual([1, expect.stringMatching(/^leasehold: 409 \w+: [^\n]+\n$/)]);

    expect(await leaseholdJson(['session', 'cancel', 'batch-2'], admin)).toEqual({ stopped: 1 });
    expect((await leaseholdJson<{ depth: number }>(['stats', env.id], admin)).depth).toBe(2);
  });

  it('stats --watch prints a sample per interval until Ctrl-C, then exits 0', async () => {
    const { env } = await environment('watch');
    const child = spawnLeasehold(['stats', env.id, '--watch', '--interval', '1', '--json'], admin);
    let out = '';
    const twoSamples = new Promise<void>((resolve) =>
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.split('\n').length > 2) resolve();
      }),
    );
    await twoSamples;
    child.kill('SIGINT');
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(0);
    const samples = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { depth: number; at: string });
    expect(samples.length).toBeGreaterThanOrEqual(2);
    expect(samples[0]).toMatchObject({ depth: 0, pending: 0, workers_polling: 0 });
  });

  it('fails with one line and exit 1 for a bad key or an unknown id, and exit 3 when the server is down', async () => {
    const { env } = await environment('errors');
    const [badKey, unknownWork, unknownEnv] = await Promise.all([
      leasehold(['env', 'list'], { LEASEHOLD_URL: server.baseURL, LEASEHOLD_KEY: 'not-a-key' }),
      leasehold(['work', 'get', env.id, 'work_00000000000000000000000000'], admin),
      leasehold(['env', 'archive', 'env_does_not_exist', '--json'], admin),
    ]);
    expect(badKey).toEqual({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(/^leasehold: 401 authentication_error: [^\n]+\n$/),
    });
    expect(unknownWork).toEqual({
      code: 1,
      stdout: '',
      stderr: 'leasehold: 404 not_found_error: work item not found\n',
    });
    expect(unknownEnv).toEqual({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(/^leasehold: 404 not_found_error: [^\n]+\n$/),
    });

    // --url and --key win over the environment; a port nothing listens on is exit 3.
    const url = `http://127.0.0.1:${await deadPort()}`;
    const down = await leasehold(['stats', env.id, '--url', url, '--key', 'k'], admin);
    expect(down).toEqual({ code: 3, stdout: '', stderr: `leasehold: cannot reach ${url}: ECONNREFUSED\n` });
  });
});
