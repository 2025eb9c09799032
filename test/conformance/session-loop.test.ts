/**
 * The session loop end to end, as a BYOC user runs it: the real Node server (with its brain
 * in process, on the Messages API of a local fake that checks every request), a real
 * nats-server for the journal, and the official SDK — `beta.agents`, `beta.sessions` and the
 * unmodified `EnvironmentWorker` with its default toolset plus one custom tool.
 */
import Anthropic from '@anthropic-ai/sdk';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import { betaAgentToolset20260401 } from '@anthropic-ai/sdk/tools/agent-toolset/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestDb } from '../helpers/db.js';
import { type LoopServer, startLoopServer } from '../helpers/loop-server.js';
import type { MessagesServer } from '../helpers/messages-server.js';
import type { RunningServer } from '../helpers/server.js';
import {
  expectStory,
  STORY_MESSAGE,
  STORY_RESPONSES,
  STORY_TOOLS,
  STORY_USAGE,
} from '../helpers/session-story.js';
import { workOf } from '../helpers/sessions.js';

let testDb: TestDb;
let loop: LoopServer;
let messages: MessagesServer;
let server: RunningServer;
let workdir: string;

beforeAll(async () => {
  loop = await startLoopServer({ responses: STORY_RESPONSES, tools: STORY_TOOLS });
  ({ testDb, messages, server, workdir } = loop);
}, 120_000);

afterAll(async () => {
  await loop?.close();
});

const client = (key: string) => new Anthropic({ apiKey: key, baseURL: server.baseURL, maxRetries: 2 });

describe('the session loop with the SDK’s EnvironmentWorker', () => {
  it('a user message runs bash and a custom tool on the worker, then the agent answers and the session idles with end_turn', async () => {
    const admin = client(server.adminKey);
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
    const environment = await admin.beta.environments.create({
      name: 'byoc',
      config: { type: 'self_hosted' },
    });
    const key = await loop.environmentKey(environment.id);
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

    const ac = new AbortController();
    const lookup = betaTool({
      name: 'lookup',
      description: 'Looks a word up.',
      inputSchema: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] } as const,
      run: async ({ word }) => `${word} means a lease`,
    });
    const worker = client(key).beta.environments.work.worker({
      environmentId: environment.id,
      environmentKey: key,
      workdir,
      workerId: 'byoc-e2e',
      memorySyncIntervalMs: null,
      maxIdleMs: 1_000,
      tools: (ctx) => [...betaAgentToolset20260401(ctx), lookup],
    });
    const running = worker.run(ac.signal);

    await admin.beta.sessions.events.send(session.id, {
      events: [
        {
          type: 'user.message',
          content: [{ type: 'text', text: STORY_MESSAGE }],
        },
      ],
    });
    await Promise.race([
      ended,
      new Promise((_, reject) =>
        setTimeout(
          () =>
            reject(
              new Error(`no end_turn within 30 s; streamed ${JSON.stringify(streamed.map((e) => e.type))}`),
            ),
          30_000,
        ),
      ),
    ]);
    stream.controller.abort();

    const listed: Array<Record<string, unknown>> = [];
    for await (const e of admin.beta.sessions.events.list(session.id, { limit: 1000 }))
      listed.push(e as unknown as Record<string, unknown>);
    expectStory(listed, streamed, messages);

    // The worker idles out after end_turn and force-stops its item: nothing is left live.
    await until(
      async () => (await workOf(testDb.db, session.id)).every((w) => w.state === 'stopped'),
      15_000,
    );
    ac.abort();
    await running.catch(() => {});
    const retrieved = await admin.beta.sessions.retrieve(session.id);
    expect(retrieved).toMatchObject({ status: 'idle', usage: STORY_USAGE });
  }, 60_000);
});

async function until(check: () => Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
