/**
 * Healthchecks with the official SDK 1.14.0: the real Node server on this file's database, a
 * healthcheck asked for over the platform lane, and a real `EnvironmentWorker` polling the
 * environment. The worker treats a `data.type: "healthcheck"` item as the SDK says it does:
 * it acks it, runs nothing for it (no session is fetched) and force-stops it. The operator's
 * read and the console's environment page then show it answered.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueEnvironmentKey } from '../../src/auth/credentials.js';
import { environmentHealthchecks } from '../../src/queue/index.js';
import { apiKey } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import { createEnvironment, readWork } from '../helpers/factories.js';
import { useNodeServer } from '../helpers/server.js';

const t = useTestDb('pg');
const server = useNodeServer(t);

interface Sent {
  method: string;
  path: string;
  body: string | null;
  status: number | null;
}

/** An SDK client with `key`, noting every request it sends and the status that came back. */
function recordingClient(key: string): { client: Anthropic; sent: Sent[] } {
  const sent: Sent[] = [];
  const client = new Anthropic({
    apiKey: key,
    baseURL: server.baseURL,
    maxRetries: 0,
    logLevel: 'off',
    fetch: async (input: string | URL | Request, init?: RequestInit) => {
      const url = new URL(input instanceof Request ? input.url : input.toString());
      const entry: Sent = {
        method: (init?.method ?? 'GET').toUpperCase(),
        path: url.pathname,
        body: typeof init?.body === 'string' ? init.body : null,
        status: null,
      };
      sent.push(entry);
      const response = await fetch(input, init);
      entry.status = response.status;
      return response;
    },
  });
  return { client, sent };
}

/** Waits (bounded) until `check` holds; fails naming `what` and the last value seen. */
async function until<T>(what: string, read: () => Promise<T>, check: (v: T) => boolean, ms = 10_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const last = await read();
    if (check(last)) return last;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}; last seen: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The console's environment page on the running server, signed in with the admin key. */
async function consolePage(environmentId: string, adminKey: string): Promise<string> {
  const signIn = await fetch(`${server.baseURL}/console/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: server.baseURL },
    body: new URLSearchParams({ key: adminKey }).toString(),
    redirect: 'manual',
  });
  expect(signIn.status).toBe(303);
  const cookie = signIn.headers.getSetCookie()[0]!.split(';')[0]!;
  const page = await fetch(`${server.baseURL}/console/environments/${environmentId}`, {
    headers: { cookie },
  });
  expect(page.status).toBe(200);
  return page.text();
}

describe('a healthcheck through the SDK’s EnvironmentWorker', () => {
  let workdir: string;
  beforeAll(async () => {
    workdir = await mkdtemp(path.join(tmpdir(), 'leasehold-healthcheck-'));
  });
  afterAll(async () => {
    await rm(workdir, { recursive: true, force: true });
  });

  it('the worker acks the healthcheck and force-stops it without fetching any session, and the environment shows it answered', async () => {
    const environmentId = await createEnvironment(t.db, 'self_hosted');
    const { key } = await issueEnvironmentKey(t.db, environmentId, 'healthcheck worker', null);
    // useTestDb empties the tables before each test, so the admin key is made here.
    const adminKey = await apiKey(t.db, 'admin');
    const admin = recordingClient(adminKey);
    // The SDK has no method for it: its generic post, with the admin key.
    const asked = (await admin.client.post(`/v1/platform/environments/${environmentId}/healthchecks`, {
      body: {},
    })) as { created: boolean; work: { id: string; data: { type: string; id: string } } };
    expect(asked.created).toBe(true);
    const workId = asked.work.id;
    expect(asked.work.data).toEqual({ type: 'healthcheck', id: expect.stringMatching(/^hc_/) });

    const host = recordingClient(adminKey);
    const ac = new AbortController();
    const running = host.client.beta.environments.work
      .worker({
        environmentId,
        environmentKey: key,
        workdir,
        workerId: 'healthcheck-worker',
        memorySyncIntervalMs: null,
      })
      .run(ac.signal);
    try {
      await until(
        'the worker to stop the healthcheck',
        () => readWork(t.db, workId),
        (w) => w?.state === 'stopped',
      );
    } finally {
      ac.abort();
      await Promise.race([
        running.catch(() => {}),
        new Promise((_, reject) =>
          setTimeout(() => reject(new Error('the worker did not end within 5 s')), 5_000),
        ),
      ]);
    }

    const to = (method: string, suffix: string) =>
      host.sent.filter((s) => s.method === method && s.path.endsWith(suffix)).map((s) => [s.body, s.status]);
    expect(to('POST', `/work/${workId}/ack`).map(([, status]) => status)).toEqual([200]);
    expect(to('POST', `/work/${workId}/stop`)).toEqual([['{"force":true}', 200]]);
    expect(host.sent.filter((s) => s.path.startsWith('/v1/sessions'))).toEqual([]);

    const item = await admin.client.beta.environments.work.retrieve(workId, {
      environment_id: environmentId,
    });
    expect(item).toMatchObject({
      id: workId,
      data: asked.work.data,
      state: 'stopped',
      acknowledged_at: expect.any(String),
      stopped_at: expect.any(String),
    });

    const read = await environmentHealthchecks(t.db, environmentId);
    expect(read.waiting).toBeNull();
    expect(read.answered).toMatchObject({
      id: workId,
      state: 'stopped',
      acknowledgedAt: item.acknowledged_at,
    });

    const page = await consolePage(environmentId, adminKey);
    const section = page.slice(page.indexOf('id="healthchecks"'), page.indexOf('id="work"'));
    expect(section).toContain('Last answered');
    expect(section).toContain(asked.work.data.id);
    expect(section).toContain(`href="/console/work/${workId}"`);
    expect(section).toMatch(/stopped/);
  });
});
