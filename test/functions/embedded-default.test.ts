/**
 * The embedded default: `npm start` with nothing configured — no DATABASE_URL, no
 * LEASEHOLD_ADMIN_KEY, no LEASEHOLD_DATA_DIR — in an empty working directory. The server keeps
 * its PGlite database in `./.leasehold/data` and writes a generated admin key to
 * `./.leasehold/admin-key`; everything after that goes over HTTP: management with that key,
 * the platform lane to enqueue, and the official SDK for the worker's side.
 *
 * Only PORT is set (a free loopback port, so test runs cannot collide on 8787).
 */
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout } from 'node:timers/promises';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningServer, startServer } from '../helpers/server.js';

let cwd: string;
let server: RunningServer | undefined;

beforeAll(async () => {
  cwd = await mkdtemp(path.join(tmpdir(), 'leasehold-embedded-'));
});

afterAll(async () => {
  await server?.stop();
  await rm(cwd, { recursive: true, force: true });
});

const start = async () => {
  server = await startServer({ databaseUrl: null, adminKey: null, cwd });
  return server;
};

/** A JSON request with `key` as the bearer credential; fails on any status but `status`. */
async function call<T>(
  s: RunningServer,
  key: string,
  method: string,
  route: string,
  body: unknown,
  status: number,
): Promise<T> {
  const res = await fetch(`${s.baseURL}${route}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  expect(res.status, `${method} ${route}: ${text}`).toBe(status);
  return JSON.parse(text) as T;
}

const adminKeyFile = () => path.join(cwd, '.leasehold', 'admin-key');

describe('npm start with no configuration', () => {
  let adminKey: string;
  let environmentId: string;
  let workId: string;

  it('keeps its database in ./.leasehold/data and a generated admin key, readable by its owner only and printed nowhere, in ./.leasehold/admin-key', async () => {
    const s = await start();
    expect((await stat(path.join(cwd, '.leasehold', 'data', 'PG_VERSION'))).isFile()).toBe(true);
    const file = await stat(adminKeyFile());
    expect(file.mode & 0o777).toBe(0o600);
    adminKey = (await readFile(adminKeyFile(), 'utf8')).trim();
    expect(adminKey).toMatch(/^\S{20,}$/);
    expect(s.output()).toContain('embedded PGlite');
    expect(s.output()).not.toContain(adminKey);
  });

  it('the generated key administers it: a self_hosted environment, its key and a tool_exec from the platform lane; the SDK polls, acks, heartbeats and stops that item', async () => {
    const s = server!;
    const env = await call<{ id: string }>(
      s,
      adminKey,
      'POST',
      '/v1/environments',
      { name: 'embedded', config: { type: 'self_hosted' } },
      200,
    );
    environmentId = env.id;
    const { key } = await call<{ key: string }>(
      s,
      adminKey,
      'POST',
      `/v1/environments/${environmentId}/keys`,
      { name: 'worker' },
      201,
    );
    const enqueued = await call<{ created: boolean; work: { id: string } }>(
      s,
      adminKey,
      'POST',
      '/v1/platform/work',
      { environment_id: environmentId, session_id: 'sesn_embedded_1', kind: 'tool_exec' },
      201,
    );
    expect(enqueued.created).toBe(true);
    workId = enqueued.work.id;

    const worker = new Anthropic({ apiKey: key, baseURL: s.baseURL, maxRetries: 0 }).beta.environments.work;
    const admin = new Anthropic({ apiKey: adminKey, baseURL: s.baseURL, maxRetries: 0 }).beta.environments
      .work;

    const polled = await worker.poll(environmentId, { block_ms: 500 });
    expect(polled).toMatchObject({ id: workId, environment_id: environmentId, state: 'queued' });
    expect(await worker.ack(workId, { environment_id: environmentId })).toMatchObject({
      id: workId,
      state: 'starting',
    });
    const beat = await worker.heartbeat(workId, {
      environment_id: environmentId,
      expected_last_heartbeat: 'NO_HEARTBEAT',
    });
    expect(beat).toMatchObject({ state: 'active', lease_extended: true });
    expect(await admin.retrieve(workId, { environment_id: environmentId })).toMatchObject({
      state: 'active',
      latest_heartbeat_at: beat.last_heartbeat,
    });

    const stopped = await worker.stop(workId, { environment_id: environmentId, force: true });
    expect(stopped).toMatchObject({ id: workId, state: 'stopped', stopped_at: expect.any(String) });
    expect(await admin.retrieve(workId, { environment_id: environmentId })).toEqual(stopped);
    expect(await worker.poll(environmentId)).toBe(null);
  });

  it('a second start in the same directory reuses the data and the admin key file, unchanged, and the key still works', async () => {
    await server!.stop();
    const before = await readFile(adminKeyFile(), 'utf8');
    const s = await start();
    expect(await readFile(adminKeyFile(), 'utf8')).toBe(before);
    expect(s.output()).not.toContain('created the first admin API key');

    const admin = new Anthropic({ apiKey: adminKey, baseURL: s.baseURL, maxRetries: 0 }).beta.environments
      .work;
    expect(await admin.retrieve(workId, { environment_id: environmentId })).toMatchObject({
      id: workId,
      state: 'stopped',
    });
  });
});

describe('the embedded database, which no autovacuum reaches', () => {
  it('is vacuumed by housekeeping: a run vacuums the whole database at the first run and says how long the run took', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'leasehold-embedded-vacuum-'));
    const s = await startServer({
      databaseUrl: null,
      adminKey: null,
      cwd: dir,
      env: { LEASEHOLD_HOUSEKEEPING_EVERY_MS: '100' },
    });
    try {
      const said = /housekeeping vacuumed the embedded database \(the run took \d+ ms\)/;
      const deadline = Date.now() + 30_000;
      while (!said.test(s.output()) && Date.now() < deadline) await setTimeout(50);
      expect(s.output()).toMatch(said);
      expect(s.output()).not.toContain('warn: housekeeping');
    } finally {
      await s.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
