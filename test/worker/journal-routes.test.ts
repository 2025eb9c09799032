/**
 * The journal served by the Worker inside workerd: the platform journal routes and the
 * console's journal pages answer what the app answers over a held connection (the Node
 * server's wiring), over one websocket NATS connection per request that is opened only when a
 * request reads the journal and closed once its response is done.
 *
 * Connections are counted on the nats-server's monitoring endpoint (`/connz`, closed ones
 * included), by the name the Worker gives its connections. This is the one workerd file that
 * reaches the journal through the Worker, so the counts it reads are its own requests'.
 */
import { createExecutionContext, env, waitOnExecutionContext } from 'cloudflare:test';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import worker from '../../functions/worker.js';
import { createApp } from '../../src/api/app.js';
import { toWireRecord } from '../../src/api/routes/journal-wire.js';
import type { AppEnv } from '../../src/api/types.js';
import { issueApiKey, issueEnvironmentKey } from '../../src/auth/credentials.js';
import { registerConsole } from '../../src/console/index.js';
import { connectNeon } from '../../src/db/drivers/neon.js';
import { recordHeaders } from '../../src/journal/codec.js';
import { connectJournal } from '../../src/journal/connect.js';
import { read } from '../../src/journal/read.js';
import { ensureJournalStream } from '../../src/journal/stream.js';
import { journalSubject } from '../../src/journal/types.js';
import { setupSession } from '../helpers/factories.js';
import { rawJournal, seedMarkedJournal, task } from '../helpers/raw-journal.js';
import { bindings, withDb } from './db.js';

const ORIGIN = 'http://leasehold.test';
/** The name the Worker gives its per-request journal connections. */
const WORKER_CONNECTION = 'leasehold-api';
const natsUrl = (env as unknown as { NATS_URL: string }).NATS_URL;
const monitorUrl = inject('workerdNatsMonitorUrl');
const RUN = `wj${Date.now()}`;

/** One request through the Worker's entry, returned once its `waitUntil` work (the closes) is done. */
async function send(
  path: string,
  init: RequestInit = {},
  overrides: Record<string, unknown> = {},
): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await worker.fetch(
    new Request(`${ORIGIN}${path}`, { redirect: 'manual', ...init }),
    { ...env, ...overrides },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return res;
}

const bearer = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });

interface Connz {
  connections: { name?: string; stop?: string }[] | null;
}

/** The Worker's connections the server has seen (`opened`, closed ones included) and holds now (`open`). */
async function workerConnections(): Promise<{ opened: number; open: number }> {
  const count = async (state: 'all' | 'open') => {
    const res = await fetch(`${monitorUrl}/connz?state=${state}&limit=100000`);
    if (!res.ok) throw new Error(`nats-server monitoring answered ${res.status}`);
    const body = (await res.json()) as Connz;
    return (body.connections ?? []).filter((c) => c.name === WORKER_CONNECTION).length;
  };
  return { opened: await count('all'), open: await count('open') };
}

/**
 * Waits (bounded) until the nats-server's count of Worker connections (`opened`: seen in all,
 * `open`: held now) reaches `count`. The server learns of a close a moment after the client
 * makes it, over the socket, and a connection that is closing is, for that moment, in
 * neither its open list nor its closed one.
 */
async function connectionsSettleAt(which: 'opened' | 'open', count: number): Promise<void> {
  const deadline = Date.now() + 3_000;
  let seen = await workerConnections();
  while (seen[which] !== count && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
    seen = await workerConnections();
  }
  const label =
    which === 'opened'
      ? 'Worker connections the nats-server has seen'
      : 'Worker connections the nats-server still holds';
  expect(seen[which], label).toBe(count);
}

describe('the journal through the Worker under workerd', () => {
  let nc: NatsConnection;
  let platformKey: string;
  let adminKey: string;
  /** The app over a connection held for the whole file: how the Node server serves it. */
  let heldApp: Hono<AppEnv>;
  let closeHeldDb: () => Promise<void>;

  beforeAll(async () => {
    nc = await connectJournal(natsUrl, { reconnect: false, name: 'leasehold-test' });
    // Provisioning is a deploy step on Workers (`npm run journal:provision`): done here once.
    await ensureJournalStream(await jetstreamManager(nc));
    const js = jetstream(nc);
    // A fenced claim, an interrupted tool and a commit on `agent`; an unanswered unsafe tool on `broken`.
    await seedMarkedJournal(js, RUN, { state: new Uint8Array([1, 2, 3]) });

    ({ platformKey, adminKey } = await withDb(async (db) => ({
      platformKey: (await issueApiKey(db, 'journal platform', 'platform', null)).key,
      adminKey: (await issueApiKey(db, 'journal admin', 'admin', null)).key,
    })));
    const held = connectNeon(bindings.DATABASE_URL, { localProxy: bindings.LEASEHOLD_NEON_WS_PROXY });
    closeHeldDb = () => held.close();
    heldApp = createApp(
      { db: held.db, journal: () => Promise.resolve({ nc, js }) },
      { console: registerConsole },
    );
  });

  /** Signs the admin key in to the console through the Worker; the cookie a browser would send back. */
  async function signIn(): Promise<string> {
    const res = await send('/console/sign-in', {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ key: adminKey }).toString(),
    });
    expect(res.status).toBe(303);
    return res.headers.get('set-cookie')!.split(';')[0]!;
  }

  afterAll(async () => {
    await closeHeldDb?.();
    await nc?.close();
  });

  it('reads a step’s records and checks the run, with the bodies the held-connection app answers', async () => {
    const expected = (await read(jetstream(nc), RUN, 'agent')).map(toWireRecord);
    expect(expected.map((r) => r.type)).toEqual(['claim', 'tool.intent', 'claim', 'tool.result', 'commit']);
    const paths = [
      `/v1/platform/runs/${RUN}/steps/agent/journal`,
      `/v1/platform/runs/${RUN}/steps/agent/journal?after_seq=${expected[1]!.seq}&limit=2`,
      `/v1/platform/runs/${RUN}/check`,
      `/v1/platform/runs/${RUN}/check?step=broken`,
    ];
    const bodies: unknown[] = [];
    for (const path of paths) {
      const res = await send(path, bearer(platformKey));
      expect(res.status, path).toBe(200);
      const body = await res.json();
      const held = await heldApp.request(path, bearer(platformKey));
      expect(held.status, path).toBe(200);
      expect(body, path).toEqual(await held.json());
      bodies.push(body);
    }
    const [page, later, report, brokenOnly] = bodies as [
      { data: unknown[]; next_after_seq: number | null },
      { data: unknown[]; next_after_seq: number | null },
      { ok: boolean; steps: { step_id: string; violations: string[] }[] },
      { steps: { step_id: string }[] },
    ];
    expect(page).toEqual({ data: expected, next_after_seq: null });
    expect(later).toEqual({ data: expected.slice(2, 4), next_after_seq: expected[3]!.seq });
    expect(report.ok).toBe(false);
    expect(report.steps.map((s) => [s.step_id, s.violations.length > 0])).toEqual([
      ['agent', false],
      ['broken', true],
    ]);
    expect(brokenOnly.steps.map((s) => s.step_id)).toEqual(['broken']);
  });

  it('the console’s journal pages render the run’s check and the step’s marked records', async () => {
    const cookie = await signIn();
    const before = await workerConnections();
    const runPage = await send(`/console/journal?run=${RUN}`, { headers: { cookie } });
    expect(runPage.status).toBe(200);
    const runHtml = await runPage.text();
    expect(runHtml).toContain('violations found');
    expect(runHtml).toMatch(/<tr class="violation">\s*<th scope="row"><a href="[^"]+\/broken"/);
    expect(runHtml).toContain(`/console/journal/${RUN}/agent`);

    // The step page reads twice through the in-process API (records, then the step's check): one connection.
    const stepPage = await send(`/console/journal/${RUN}/agent`, { headers: { cookie } });
    expect(stepPage.status).toBe(200);
    const stepHtml = await stepPage.text();
    const rows = [
      ...stepHtml.matchAll(/<tr class="[^"]*">\s*<td class="num">(\d+)<\/td>\s*<td>(.*?)<\/td>/gs),
    ];
    expect(rows.map((r) => /<code>([^<]+)<\/code>/.exec(r[2]!)?.[1])).toEqual([
      'claim',
      'tool.intent',
      'claim',
      'tool.result',
      'commit',
    ]);
    expect(rows[0]![2]).toMatch(/fenced by seq \d+/);
    expect(rows[1]![2]).toContain('written under a fenced claim');
    expect(rows[3]![2]).toContain('interrupted');

    const after = await workerConnections();
    expect(after.opened - before.opened, 'connections opened by the two pages').toBe(2);
    await connectionsSettleAt('open', before.open);
  });

  it('a request that does not read the journal opens no NATS connection', async () => {
    const { environmentId, key } = await withDb(async (db) => {
      const s = await setupSession(db, 'self_hosted');
      return {
        environmentId: s.environmentId,
        key: (await issueEnvironmentKey(db, s.environmentId, 'journal test', null)).key,
      };
    });
    const before = await workerConnections();
    const poll = await send(`/v1/environments/${environmentId}/work/poll`, bearer(key));
    expect(poll.status).toBe(200);
    expect(await poll.text()).toBe('null\n');
    // Refused before the journal is asked for: a bad run id, a missing credential.
    expect((await send('/v1/platform/runs/a.b/check', bearer(platformKey))).status).toBe(400);
    expect((await send(`/v1/platform/runs/${RUN}/check`)).status).toBe(401);
    expect(await workerConnections()).toEqual(before);
  });

  it('each journal request opens one connection, and the server holds none of them after the response', async () => {
    const before = await workerConnections();
    const path = `/v1/platform/runs/${RUN}/steps/agent/journal`;
    for (let i = 0; i < 3; i++) expect((await send(path, bearer(platformKey))).status).toBe(200);
    await connectionsSettleAt('opened', before.opened + 3);
    await connectionsSettleAt('open', before.open);
  });

  it('a journal read that fails (a corrupt record: 502) still closes its connection', async () => {
    const run = `${RUN}c`;
    const js = jetstream(nc);
    const w = rawJournal(js, run, 'agent');
    await w.claim(task(run, 'agent'));
    await js.publish(journalSubject(run, 'agent'), new TextEncoder().encode('{"note": oops'), {
      headers: recordHeaders('entry', task(run, 'agent'), 1),
      expect: { lastSubjectSequence: w.tail },
    });
    const before = await workerConnections();
    const res = await send(`/v1/platform/runs/${run}/steps/agent/journal`, bearer(platformKey));
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    await connectionsSettleAt('opened', before.opened + 1);
    await connectionsSettleAt('open', before.open);
  });

  it('NATS it cannot reach is the documented 503 with retry-after, on the API and on the console page', async () => {
    const unreachable = { NATS_URL: 'ws://127.0.0.1:1' };
    const res = await send(`/v1/platform/runs/${RUN}/check`, bearer(platformKey), unreachable);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('2');
    expect(await res.json()).toEqual({
      type: 'error',
      error: {
        type: 'overloaded_error',
        message: 'the journal is unavailable: NATS is not reachable right now',
      },
      request_id: expect.stringMatching(/^req_/),
    });
    const page = await send(
      `/console/journal?run=${RUN}`,
      { headers: { cookie: await signIn() } },
      unreachable,
    );
    expect(page.status).toBe(503);
    expect(await page.text()).toContain('NATS is not reachable right now');
  });

  it('without NATS_URL the journal routes answer 503 “not configured” and the console says so', async () => {
    const unset = { NATS_URL: undefined };
    const before = await workerConnections();
    const res = await send(`/v1/platform/runs/${RUN}/check`, bearer(platformKey), unset);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({
      error: { type: 'api_error', message: 'the journal is not configured on this server (set NATS_URL)' },
    });
    const page = await send(`/console/journal?run=${RUN}`, { headers: { cookie: await signIn() } }, unset);
    expect(page.status).toBe(503);
    expect(await page.text()).toContain('the journal is not configured on this server');
    expect(await workerConnections()).toEqual(before);
  });
});
