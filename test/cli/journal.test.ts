/**
 * `journal provision|read|check` from the real binary: provision against a private
 * nats-server, then read and check over the Node server's platform lane (NATS_URL set).
 */
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb, type TestDb } from '../helpers/db.js';
import { useNatsServer } from '../helpers/nats.js';
import { rawJournal, task } from '../helpers/raw-journal.js';
import { type RunningServer, startServer } from '../helpers/server.js';
import { leasehold, leaseholdJson } from './run-bin.js';

describe('leasehold journal', () => {
  const nats = useNatsServer();
  let db: TestDb;
  let server: RunningServer;
  let nc: NatsConnection;
  let admin: Record<string, string>;
  let provisioned: { created: boolean; replicas: number };

  beforeAll(async () => {
    // Provisioned by the CLI before the server starts, so the server finds it and only checks it.
    provisioned = await leaseholdJson(['journal', 'provision', '--nats-url', nats.wsUrl]);
    db = await openTestDb('pg');
    server = await startServer({ databaseUrl: db.url!, env: { NATS_URL: nats.wsUrl } });
    admin = { LEASEHOLD_URL: server.baseURL, LEASEHOLD_KEY: server.adminKey };
    nc = await nats.connect();
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
    await db?.close();
  });

  it('journal provision creates the stream once, then finds it compatible; no URL is a usage error', async () => {
    expect(provisioned).toEqual({ stream: 'AGENT_JOURNAL', created: true, replicas: 1 });
    const again = await leasehold(['journal', 'provision'], { NATS_URL: nats.wsUrl });
    expect(again).toMatchObject({
      code: 0,
      stdout: 'AGENT_JOURNAL already provisioned and compatible (replicas 1)\n',
    });
    expect(await leasehold(['journal', 'provision'])).toMatchObject({
      code: 2,
      stderr: 'leasehold: no NATS URL: pass --nats-url or set NATS_URL (ws:// or wss://)\n',
    });
  });

  it('journal read prints every record in order; --json is one page that reaches the tail', async () => {
    const js = jetstream(nc);
    const w = rawJournal(js, 'cli-read', 'agent');
    await w.claim(task('cli-read', 'agent'));
    for (let i = 0; i < 3; i++) await w.write('entry', task('cli-read', 'agent'), { i });
    await w.commit(task('cli-read', 'agent'), { action: 'complete' });

    const [page, table, empty] = await Promise.all([
      leaseholdJson<{ data: { seq: number; type: string }[]; next_after_seq: null }>(
        ['journal', 'read', 'cli-read', 'agent'],
        admin,
      ),
      leasehold(['journal', 'read', 'cli-read', 'agent'], admin),
      leaseholdJson<{ data: unknown[] }>(['journal', 'read', 'cli-read', 'nothing'], admin),
    ]);
    expect(page.data.map((r) => r.type)).toEqual(['claim', 'entry', 'entry', 'entry', 'commit']);
    expect(page.next_after_seq).toBeNull();
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^SEQ\s+TIME\s+TYPE\s+ITERATION\s+ATTEMPT\s+INDEX\s+DATA$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/)[2])).toEqual([
      'claim',
      'entry',
      'entry',
      'entry',
      'commit',
    ]);
    expect(lines[2]).toContain('{"i":0}');
    expect(empty.data).toEqual([]);
  });

  it('journal check: ok exits 0; a violation is printed and exits 1 with a one-line reason', async () => {
    const js = jetstream(nc);
    const good = rawJournal(js, 'cli-check', 'good');
    await good.claim(task('cli-check', 'good'));
    await good.commit(task('cli-check', 'good'), { action: 'complete' });
    const ok = await leasehold(['journal', 'check', 'cli-check'], admin);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/^good\s+2\s+1\s+0$/m);
    expect(ok.stdout).toContain('ok: run cli-check, 1 step(s)');

    const bad = rawJournal(js, 'cli-check', 'bad');
    await bad.claim(task('cli-check', 'bad'));
    await bad.commit(task('cli-check', 'bad'), { action: 'complete' });
    await bad.commit(task('cli-check', 'bad'), { action: 'complete' });
    const [human, json] = await Promise.all([
      leasehold(['journal', 'check', 'cli-check'], admin),
      leasehold(['journal', 'check', 'cli-check', '--json'], admin),
    ]);
    expect(human.code).toBe(1);
    expect(human.stdout).toMatch(/^violation in bad: invariant 1: /m);
    expect(human.stderr).toBe('leasehold: run cli-check has 1 journal violation\n');
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ run_id: 'cli-check', ok: false });
  });

  it('a bad run name is the API’s 400 and an unknown key is 401', async () => {
    const bad = await leasehold(['journal', 'check', 'no spaces'], admin);
    expect([bad.code, bad.stderr]).toEqual([
      1,
      expect.stringMatching(/^leasehold: 400 invalid_request_error: [^\n]+\n$/),
    ]);
    const wrongKey = await leasehold(['journal', 'read', 'r', 's', '--key', 'nope'], admin);
    expect([wrongKey.code, wrongKey.stderr]).toEqual([1, expect.stringMatching(/^leasehold: 401 /)]);
  });
});
