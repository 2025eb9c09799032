/**
 * The session loop end to end on the Workers build, as a BYOC user runs it there: the API
 * Worker and the brain Worker as `wrangler deploy` bundles them, served by workerd (Miniflare's
 * Node API) with the API Worker's service binding `BRAIN` to the brain; PostgreSQL through the
 * Neon driver and a local wsproxy, NATS over nats-server's websocket listener, the Messages API
 * faked by a local server that checks every request. The official SDK — `beta.agents`,
 * `beta.sessions` and the unmodified `EnvironmentWorker` (it spawns bash, so it runs here, on
 * Node) — talks to the API Worker over HTTP. The same story and assertions as
 * test/conformance/session-loop.test.ts on the Node server; then the brain Worker's cron sweep
 * runs a turn no trigger announced. Every wait is bounded: setup 90 s (two Worker builds and
 * workerd's start, ~15 s on a loaded 2-core machine), the loop 30 s, the sweep 8 s; its usual
 * run is about 10 s.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import { betaAgentToolset20260401 } from '@anthropic-ai/sdk/tools/agent-toolset/node';
import { jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureJournalStream } from '../../src/journal/stream.js';
import { postEvents } from '../../src/loop/index.js';
import { openTestDb, type TestDb } from '../helpers/db.js';
import { MessagesServer } from '../helpers/messages-server.js';
import { type NatsServer, startNatsServer } from '../helpers/nats.js';
import {
  expectStory,
  LOOKUP_SCHEMA,
  STORY_MESSAGE,
  STORY_RESPONSES,
  STORY_TOOLS,
  STORY_USAGE,
} from '../helpers/session-story.js';
import { eventsOf, workOf } from '../helpers/sessions.js';
import { type RunningWorkers, startWorkers } from '../helpers/workers.js';

const MODEL_KEY = 'sk-test-model-key';
const usage = { input_tokens: 12, output_tokens: 7 };
const RESPONSES = [
  ...STORY_RESPONSES,
  // The sweep's turn (second test).
  { content: [{ type: 'text', text: 'Swept up and answered.' }], stop_reason: 'end_turn', usage },
];

let testDb: TestDb;
let nats: NatsServer;
let messages: MessagesServer;
let workers: RunningWorkers;
let workdir: string;
/** The SDK's EnvironmentWorker of the first test: aborted at its end, or in afterAll. */
const stopWorker = new AbortController();
let workerRun: Promise<unknown> | undefined;
const adminKey = `lh_test_admin_${randomBytes(24).toString('hex')}`;

beforeAll(async () => {
  testDb = await openTestDb('pg');
  nats = await startNatsServer();
  // A deploy step on Workers (`npm run journal:provision`): the brain Worker never provisions.
  await ensureJournalStream(await jetstreamManager(await nats.connect()));
  messages = await MessagesServer.start({ responses: RESPONSES, apiKey: MODEL_KEY, tools: STORY_TOOLS });
  workdir = await mkdtemp(path.join(tmpdir(), 'leasehold-byoc-workers-'));
  workers = await startWorkers({
    databaseUrl: testDb.url!,
    natsUrl: nats.wsUrl,
    adminKey,
    modelBaseUrl: messages.url,
    modelApiKey: MODEL_KEY,
  });
}, 90_000);

afterAll(async () => {
  // A failed test may leave the SDK's worker running: stop it before what it talks to.
  stopWorker.abort();
  await workerRun?.catch(() => {});
  await workers?.close();
  await messages?.close();
  await nats?.stop();
  await testDb?.close();
  if (workdir) await rm(workdir, { recursive: true, force: true });
});

const client = (key: string) => new Anthropic({ apiKey: key, baseURL: workers.baseURL, maxRetries: 2 });

/** Fails with what the Workers wrote, so a failure inside workerd reads in the test's output. */
function withOutput(message: string): Error {
  return new Error(`${message}\nworkerd's output (last lines):\n${workers.output().slice(-4_000)}`);
}

async function environmentKey(environmentId: string): Promise<string> {
  const res = await fetch(`${workers.baseURL}/v1/environments/${environmentId}/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'byoc worker' }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { key: string }).key;
}

let agentId = '';
let environmentId = '';

describe('the session loop on Workers with the SDK’s EnvironmentWorker', () => {
  it('a user message triggers the brain Worker; bash and a custom tool run on the worker, then the agent answers and the session idles with end_turn', async () => {
    const admin = client(adminKey);
    const agent = await admin.beta.agents.create({
      name: 'byoc agent',
      model: 'claude-test',
      system: 'You run commands.',
      tools: [
        { type: 'agent_toolset_20260401' },
        {
          type: 'custom',
          name: 'lookup',
          description: 'Looks a word up.',
          input_schema: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
        },
      ],
    });
    agentId = agent.id;
    const environment = await admin.beta.environments.create({
      name: 'byoc',
      config: { type: 'self_hosted' },
    });
    environmentId = environment.id;
    const key = await environmentKey(environment.id);
    const session = await admin.beta.sessions.create({ agent: agent.id, environment_id: environment.id });
    expect(session).toMatchObject({
      type: 'session',
      status: 'idle',
      environment_id: environment.id,
      agent: { id: agent.id, version: 1 },
    });

    // Open the stream first: it carries what is appended from now on.
    const stream = await admin.beta.sessions.events.stream(session.id);
    const streamed: Array<{ type: string; id: string }> = [];
    const ended = (async () => {
      for await (const event of stream) {
        streamed.push(event as { type: string; id: string });
        const e = event as { type: string; stop_reason?: { type: string } };
        if (e.type === 'session.status_idle' && e.stop_reason?.type === 'end_turn') return;
      }
    })();

    const lookup = betaTool({
      name: 'lookup',
      description: 'Looks a word up.',
      inputSchema: LOOKUP_SCHEMA,
      run: async ({ word }) => `${word} means a lease`,
    });
    const worker = client(key).beta.environments.work.worker({
      environmentId: environment.id,
      environmentKey: key,
      workdir,
      workerId: 'byoc-workers-e2e',
      memorySyncIntervalMs: null,
      maxIdleMs: 1_000,
      tools: (ctx) => [...betaAgentToolset20260401(ctx), lookup],
    });
    workerRun = worker.run(stopWorker.signal);

    await admin.beta.sessions.events.send(session.id, {
      events: [
        {
          type: 'user.message',
          content: [{ type: 'text', text: STORY_MESSAGE }],
        },
      ],
    });
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      ended,
      new Promise((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              withOutput(
                `no end_turn within 20 s; streamed ${JSON.stringify(streamed.map((e) => e.type))}; ` +
                  `model calls ${messages.served}, violations ${JSON.stringify(messages.violations)}`,
              ),
            ),
          20_000,
        );
      }),
    ]).finally(() => clearTimeout(timer));
    stream.controller.abort();

    const listed: Array<Record<string, unknown>> = [];
    for await (const e of admin.beta.sessions.events.list(session.id, { limit: 1000 }))
      listed.push(e as unknown as Record<string, unknown>);
    expectStory(listed, streamed, messages);

    // The worker idles out after end_turn and force-stops its item: nothing is left live.
    await until(
      async () => (await workOf(testDb.db, session.id)).every((w) => w.state === 'stopped'),
      8_000,
      async () => `work items: ${JSON.stringify(await workOf(testDb.db, session.id))}`,
    );
    stopWorker.abort();
    await workerRun.catch(() => {});
    const retrieved = await admin.beta.sessions.retrieve(session.id);
    expect(retrieved).toMatchObject({ status: 'idle', usage: STORY_USAGE });
  }, 30_000);

  it('the brain Worker’s cron sweep runs a turn whose trigger was lost', async () => {
    expect(agentId, 'runs after the first test, on its agent and environment').not.toBe('');
    const admin = client(adminKey);
    const session = await admin.beta.sessions.create({ agent: agentId, environment_id: environmentId });
    // Straight into the database, as if the request's trigger had been lost: the turn is queued
    // and no brain was told.
    await postEvents(
      testDb.db,
      session.id,
      [{ type: 'user.message', content: [{ type: 'text', text: 'Anyone there?' }] }],
      { kind: 'api' },
    );
    expect((await workOf(testDb.db, session.id)).map((w) => [w.kind, w.state])).toEqual([
      ['model_turn', 'queued'],
    ]);

    await workers.sweep();

    expect((await eventsOf(testDb.db, session.id)).map((e) => e.type)).toEqual([
      'user.message',
      'session.status_running',
      'agent.message',
      'session.status_idle',
    ]);
    expect((await workOf(testDb.db, session.id)).map((w) => [w.kind, w.state])).toEqual([
      ['model_turn', 'stopped'],
    ]);
    expect(messages.violations).toEqual([]);
    expect(messages.served).toBe(4);
  }, 8_000);
});

async function until(
  check: () => Promise<boolean>,
  ms: number,
  detail: () => Promise<string>,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw withOutput(`condition not met within ${ms} ms; ${await detail()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
