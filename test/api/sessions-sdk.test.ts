/**
 * The official SDK (`@anthropic-ai/sdk` 1.14.0) against the sessions API of the real Node server
 * (`functions/node.ts` as `npm start` runs it, on this file's database, events streamed on LISTEN/NOTIFY):
 * `client.beta.sessions` create/retrieve/list/update/archive/delete and its `events`
 * send/list/stream, with the SDK's own request building, pagination, stream parsing and error
 * classes. Agents and environments are made through the SDK too; logs are seeded and turns run
 * with the library on this file's own connection (the server runs no brain).
 */

import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import Anthropic, {
  AuthenticationError,
  BadRequestError,
  NotFoundError,
  PermissionDeniedError,
} from '@anthropic-ai/sdk';
import type {
  BetaManagedAgentsSessionEvent,
  BetaManagedAgentsStreamSessionEvents,
} from '@anthropic-ai/sdk/resources/beta/sessions/events';
import type { BetaManagedAgentsSession } from '@anthropic-ai/sdk/resources/beta/sessions/sessions';
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { appendEvents, type NewEvent } from '../../src/sessions/index.js';
import { openTestDb, type TestDb } from '../helpers/db.js';
import { WIRE_STAMP } from '../helpers/management.js';
import { type RunningServer, startServer } from '../helpers/server.js';
import { eventsOf, runTurn, toolUse, workOf } from '../helpers/sessions.js';

let testDb: TestDb;
let server: RunningServer;

beforeAll(async () => {
  testDb = await openTestDb('pg');
  server = await startServer({ databaseUrl: testDb.url! });
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await testDb?.close();
});

// Each test starts with no sessions (their logs, calls and work go with them), so a turn one
// test leaves queued is never the one another test's runTurn claims. Agents, environments and
// the server's admin key stay.
afterEach(async () => {
  await testDb.db.execute(sql`DELETE FROM sessions`);
});

const text = (t: string) => ({
  type: 'user.message' as const,
  content: [{ type: 'text' as const, text: t }],
});

/** An SDK client on the server with `key`, no retries, counting the requests it sends. */
function sdk(key: string) {
  const sent: string[] = [];
  const client = new Anthropic({
    apiKey: key,
    baseURL: server.baseURL,
    maxRetries: 0,
    fetch: (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      sent.push(`${init?.method ?? 'GET'} ${url.pathname}${url.search}`);
      return fetch(input, init);
    },
  });
  return { client, sent };
}

/** A self_hosted environment made with the SDK, an agent, and a key for the environment's worker. */
async function fixture() {
  const admin = sdk(server.adminKey);
  const environment = await admin.client.beta.environments.create({
    name: 'sessions',
    config: { type: 'self_hosted' },
  });
  const agent = await admin.client.beta.agents.create({
    name: 'coder',
    model: 'claude-opus-4-8',
    system: 'version one',
    tools: [
      { type: 'agent_toolset_20260401' },
      { type: 'custom', name: 'lookup', description: 'Looks up.', input_schema: { type: 'object' } },
    ],
  });
  const worker = sdk(await environmentKey(environment.id));
  return { admin, adminClient: admin.client, environment, agent, worker, workerClient: worker.client };
}

/** `POST /v1/environments/{id}/keys` with the admin key: the new key's secret. */
async function environmentKey(environmentId: string): Promise<string> {
  const res = await fetch(`${server.baseURL}/v1/environments/${environmentId}/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'worker' }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { key: string }).key;
}

/** The rejection of `p`, or a failure when it resolves. */
async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected the call to fail, but it succeeded');
}

/** `p`, or a failure saying `what` after `ms`. */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} (waited ${ms} ms)`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A TCP proxy to the PostgreSQL server of `target` that forwards everything, except that the
 * first chunk a client sends containing `marker` — and all that client sends after it — is
 * held until `release()`. `held` settles once it holds something.
 */
async function holdingProxy(target: URL, marker: string) {
  let armed = true;
  let releaseHeld: (() => void) | null = null;
  let released = false;
  let markHeld!: () => void;
  const held = new Promise<void>((resolve) => {
    markHeld = resolve;
  });
  const sockets = new Set<Socket>();
  const proxy = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    let queue: Buffer[] | null = null;
    client.on('data', (chunk: Buffer) => {
      if (queue) {
        queue.push(chunk);
      } else if (armed && chunk.includes(marker)) {
        armed = false;
        queue = [chunk];
        releaseHeld = () => {
          for (const c of queue ?? []) upstream.write(c);
          queue = null;
        };
        if (released) releaseHeld();
        markHeld();
      } else {
        upstream.write(chunk);
      }
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    port: (proxy.address() as AddressInfo).port,
    held,
    release: () => {
      released = true;
      releaseHeld?.();
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => proxy.close(resolve));
    },
  };
}

/** Reads a stream's items one at a time, each within a deadline. */
function reader<T>(stream: AsyncIterable<T>) {
  const it = stream[Symbol.asyncIterator]();
  return async (ms = 10_000): Promise<IteratorResult<T>> => {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        it.next(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no stream event within ${ms} ms`)), ms);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  };
}

describe('the official SDK drives the sessions API of the Node server', () => {
  it('create (by id and by versioned reference), retrieve, update, archive and delete resolve to the SDK’s types', async () => {
    const { adminClient: client, agent, environment } = await fixture();
    const sessions = client.beta.sessions;
    const created: BetaManagedAgentsSession = await sessions.create({
      agent: agent.id,
      environment_id: environment.id,
      title: 'first',
      metadata: { team: 'infra' },
      initial_events: [text('hello')],
    });
    expect(created).toMatchObject({
      type: 'session',
      id: expect.stringMatching(/^sess_/),
      environment_id: environment.id,
      status: 'idle',
      title: 'first',
      metadata: { team: 'infra' },
      agent: { type: 'agent', id: agent.id, version: 1, system: 'version one' },
      archived_at: null,
    });
    expect(created.created_at).toMatch(WIRE_STAMP);
    expect(await workOf(testDb.db, created.id)).toMatchObject([{ kind: 'model_turn', state: 'queued' }]);

    await client.beta.agents.update(agent.id, { version: 1, system: 'version two' });
    const pinned = await sessions.create({
      agent: { type: 'agent', id: agent.id, version: 1 },
      environment_id: environment.id,
    });
    expect(pinned.agent).toEqual(created.agent);
    expect((await sessions.create({ agent: agent.id, environment_id: environment.id })).agent).toMatchObject({
      version: 2,
      system: 'version two',
    });
    // A later agent update leaves the snapshot alone.
    await client.beta.agents.update(agent.id, { version: 2, system: 'version three' });
    expect((await sessions.retrieve(pinned.id)).agent).toEqual(created.agent);

    const { stats: _s, ...stable } = created;
    expect(await sessions.retrieve(created.id)).toMatchObject(stable);
    const updated = await sessions.update(created.id, {
      title: null,
      metadata: { team: null, tier: 'gold' },
    });
    expect(updated).toMatchObject({ title: null, metadata: { tier: 'gold' } });
    const archived = await sessions.archive(created.id);
    expect(archived.archived_at).toMatch(WIRE_STAMP);
    expect((await sessions.archive(created.id)).archived_at).toBe(archived.archived_at);
    expect(await sessions.delete(created.id)).toEqual({ id: created.id, type: 'session_deleted' });
    await expect(sessions.retrieve(created.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(sessions.delete(created.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('for await over list visits every session once in either order, and the SDK’s filters reach the server', async () => {
    const { admin, adminClient: client, agent, environment } = await fixture();
    const sessions = client.beta.sessions;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(
        (await sessions.create({ agent: agent.id, environment_id: environment.id, title: `s${i}` })).id,
      );
    }
    // Other tests' sessions share this server: filter to this agent.
    const seen = async (params: Parameters<typeof sessions.list>[0]) => {
      const out: string[] = [];
      for await (const s of sessions.list({ agent_id: agent.id, ...params })) out.push(s.id);
      return out;
    };
    const before = admin.sent.length;
    expect(await seen({ limit: 2 })).toEqual([...ids].reverse());
    // Pages of 2, 2 and 1: no trailing empty page, no endless loop.
    expect(admin.sent.length - before).toBe(3);
    expect(admin.sent.at(-1)).toMatch(/[?&]page=/);
    expect(await seen({ limit: 2, order: 'asc' })).toEqual(ids);

    await sessions.archive(ids[0]!);
    await sessions.update(ids[1]!, { title: 'renamed' });
    expect(await seen({ limit: 3 })).toEqual(ids.slice(1).reverse());
    expect(await seen({ limit: 3, include_archived: true })).toEqual([...ids].reverse());
    expect(await seen({ statuses: ['idle'], limit: 10 })).toEqual(ids.slice(1).reverse());
    expect(await seen({ statuses: ['running', 'terminated'] })).toEqual([]);
    expect(admin.sent.at(-1)).toContain('statuses%5B%5D=running&statuses%5B%5D=terminated');
    expect(await seen({ agent_version: 1 })).toEqual(ids.slice(1).reverse());
    expect(await seen({ agent_version: 2 })).toEqual([]);
    const third = await sessions.retrieve(ids[2]!);
    expect(await seen({ 'created_at[gte]': third.created_at })).toEqual(ids.slice(2).reverse());
    expect(await seen({ 'created_at[lt]': third.created_at, order: 'asc' })).toEqual([ids[1]!]);
  });

  it('events.list auto-pages a 2,500-event log with limit 1000 in three requests, in either order', async () => {
    const { admin, adminClient: client, agent, environment } = await fixture();
    const session = await client.beta.sessions.create({ agent: agent.id, environment_id: environment.id });
    for (let start = 0; start < 2_500; start += 500) {
      const batch: NewEvent[] = Array.from({ length: 500 }, (_, i) => ({
        type: 'agent.message',
        body: { content: [{ type: 'text', text: `m${start + i + 1}` }] },
      }));
      await appendEvents(testDb.db, session.id, batch);
    }
    const textOf = (e: BetaManagedAgentsSessionEvent) => {
      const block = e.type === 'agent.message' ? e.content[0] : undefined;
      return block?.type === 'text' ? block.text : null;
    };
    const before = admin.sent.length;
    const asc: string[] = [];
    for await (const e of client.beta.sessions.events.list(session.id, { limit: 1000 })) asc.push(textOf(e)!);
    expect(asc).toEqual(Array.from({ length: 2_500 }, (_, i) => `m${i + 1}`));
    expect(admin.sent.length - before).toBe(3);
    const desc: string[] = [];
    for await (const e of client.beta.sessions.events.list(session.id, { limit: 1000, order: 'desc' }))
      desc.push(textOf(e)!);
    expect(desc).toEqual([...asc].reverse());
    const firstPage = await client.beta.sessions.events.list(session.id);
    expect(firstPage.data).toHaveLength(100);
    expect(firstPage.hasNextPage()).toBe(true);
  });

  it('the worker’s key reads its session and answers its calls with events.send; the same answer again returns the first event', async () => {
    const { adminClient, workerClient, agent, environment } = await fixture();
    const session = await adminClient.beta.sessions.create({
      agent: agent.id,
      environment_id: environment.id,
      initial_events: [text('list files')],
    });
    await runTurn(testDb.db, session.id, [
      toolUse('toolu_1', 'bash', { command: 'ls' }),
      toolUse('toolu_2', 'lookup'),
    ]);
    expect((await workerClient.beta.sessions.retrieve(session.id)).id).toBe(session.id);
    const calls: Record<string, string> = {};
    for await (const e of workerClient.beta.sessions.events.list(session.id, { limit: 1000 })) {
      if (e.type === 'agent.tool_use' || e.type === 'agent.custom_tool_use') calls[e.name] = e.id;
    }
    expect(Object.keys(calls).sort()).toEqual(['bash', 'lookup']);

    const result = {
      type: 'user.tool_result' as const,
      tool_use_id: calls.bash!,
      content: [{ type: 'text' as const, text: 'a.txt' }],
    };
    const sent = await workerClient.beta.sessions.events.send(session.id, { events: [result] });
    expect(sent.data).toEqual([
      {
        id: expect.stringMatching(/^sevt_/),
        type: 'user.tool_result',
        processed_at: expect.stringMatching(WIRE_STAMP),
        tool_use_id: calls.bash,
        content: [{ type: 'text', text: 'a.txt' }],
        is_error: false,
      },
    ]);
    const logBefore = await eventsOf(testDb.db, session.id);
    expect(await workerClient.beta.sessions.events.send(session.id, { events: [result] })).toEqual(sent);
    expect(await eventsOf(testDb.db, session.id)).toEqual(logBefore);
    await workerClient.beta.sessions.events.send(session.id, {
      events: [{ type: 'user.custom_tool_result', custom_tool_use_id: calls.lookup!, content: [] }],
    });
    expect(
      (await workOf(testDb.db, session.id))
        .filter((w) => w.state === 'queued')
        .map((w) => w.kind)
        .sort(),
    ).toEqual(['model_turn', 'tool_exec']);
  });

  it('events.stream yields what is sent after it opens, in order, in the SDK’s shapes, and ends with session.deleted', async () => {
    const { adminClient, workerClient, agent, environment } = await fixture();
    const session = await adminClient.beta.sessions.create({
      agent: agent.id,
      environment_id: environment.id,
      initial_events: [text('before the stream')],
    });
    const stream = await workerClient.beta.sessions.events.stream(session.id);
    const next = reader<BetaManagedAgentsStreamSessionEvents>(stream);
    try {
      const sent = await adminClient.beta.sessions.events.send(session.id, {
        events: [text('one'), text('two')],
      });
      await runTurn(testDb.db, session.id, [{ type: 'text', text: 'Looking.' }, toolUse('toolu_1', 'bash')]);
      const log = await eventsOf(testDb.db, session.id);
      const got: BetaManagedAgentsStreamSessionEvents[] = [];
      for (let i = 1; i < log.length; i++) got.push((await next()).value);
      expect(got.slice(0, 2)).toEqual(sent.data);
      expect(got.map((e) => e.type)).toEqual(log.slice(1).map((e) => e.type));
      expect(got.map((e) => e.type)).toEqual([
        'user.message',
        'user.message',
        'session.status_running',
        'agent.message',
        'agent.tool_use',
        'session.status_idle',
      ]);
      const use = got[4]!;
      if (use.type !== 'agent.tool_use') throw new Error('no tool use');
      expect(use).toMatchObject({ name: 'bash', input: {}, evaluated_permission: 'allow' });
      const idle = got[5]!;
      if (idle.type !== 'session.status_idle') throw new Error('no idle');
      expect(idle.stop_reason).toEqual({ type: 'requires_action', event_ids: [use.id] });

      await workerClient.beta.sessions.events.send(session.id, {
        events: [
          { type: 'user.tool_result', tool_use_id: use.id, content: [{ type: 'text', text: 'done' }] },
        ],
      });
      expect((await next()).value).toMatchObject({ type: 'user.tool_result', tool_use_id: use.id });

      await adminClient.beta.sessions.delete(session.id);
      const deleted = (await next()).value;
      expect(deleted).toEqual({
        id: expect.stringMatching(/^sevt_/),
        type: 'session.deleted',
        processed_at: expect.stringMatching(WIRE_STAMP),
      });
      expect((await next()).done).toBe(true);
    } finally {
      stream.controller.abort();
    }
  });

  it('an event appended while the stream is still opening is streamed, however late the stream reads the log', async () => {
    // A server of its own whose database connections pass through a proxy that holds back the
    // stream's read of the session's head until the test has appended an event: what a busy
    // pool does to that read at random. The client already holds the open stream by then.
    const proxy = await holdingProxy(new URL(testDb.url!), 'SELECT last_seq FROM sessions WHERE id');
    const url = new URL(testDb.url!);
    url.port = String(proxy.port);
    const slow = await startServer({
      databaseUrl: url.toString(),
      adminKey: server.adminKey,
      // Unprepared, so every statement travels with its text and the proxy can tell them apart.
      env: { LEASEHOLD_PREPARED_STATEMENTS: 'off' },
    });
    const client = new Anthropic({ apiKey: server.adminKey, baseURL: slow.baseURL, maxRetries: 0 });
    let stream: Awaited<ReturnType<typeof client.beta.sessions.events.stream>> | undefined;
    try {
      const { agent, environment } = await fixture();
      const session = await client.beta.sessions.create({ agent: agent.id, environment_id: environment.id });
      stream = await client.beta.sessions.events.stream(session.id);
      await within(proxy.held, 10_000, 'the stream never read the head of the log');
      const [appended] = (await appendEvents(testDb.db, session.id, [
        {
          type: 'user.message',
          body: { content: [{ type: 'text', text: 'sent once the stream was open' }] },
        },
      ]))!;
      proxy.release();
      expect((await reader(stream)(5_000)).value).toMatchObject({ id: appended!.id, type: 'user.message' });
    } finally {
      stream?.controller.abort();
      proxy.release();
      await slow.stop();
      await proxy.close();
    }
  });

  it('raises BadRequestError, PermissionDeniedError, NotFoundError and AuthenticationError where the API refuses', async () => {
    const { adminClient, workerClient, agent, environment } = await fixture();
    const sessions = adminClient.beta.sessions;
    const budget = await rejection(
      sessions.create({
        agent: agent.id,
        environment_id: environment.id,
        budget: { type: 'limit', max_list_cost: { amount: '1.00', currency: 'USD' } },
      } as Parameters<typeof sessions.create>[0]),
    );
    expect(budget).toBeInstanceOf(BadRequestError);
    expect(budget.message).toContain('budget');
    const session = await sessions.create({
      agent: agent.id,
      environment_id: environment.id,
      initial_events: [text('go')],
    });
    await runTurn(testDb.db, session.id, [toolUse('toolu_1', 'bash')]);
    const use = (await eventsOf(testDb.db, session.id)).find((e) => e.type === 'agent.tool_use')!;
    await workerClient.beta.sessions.events.send(session.id, {
      events: [{ type: 'user.tool_result', tool_use_id: use.id, content: [{ type: 'text', text: 'one' }] }],
    });
    const conflict = await rejection(
      workerClient.beta.sessions.events.send(session.id, {
        events: [{ type: 'user.tool_result', tool_use_id: use.id, content: [{ type: 'text', text: 'two' }] }],
      }),
    );
    expect(conflict).toBeInstanceOf(BadRequestError);
    expect(
      await rejection(
        adminClient.beta.sessions.events.send(session.id, {
          events: [{ type: 'user.define_outcome', description: 'x', rubric: { type: 'text', content: 'y' } }],
        }),
      ),
    ).toBeInstanceOf(BadRequestError);

    const forbidden = await rejection(
      workerClient.beta.sessions.events.send(session.id, { events: [text('not mine to send')] }),
    );
    expect(forbidden).toBeInstanceOf(PermissionDeniedError);

    const other = await adminClient.beta.environments.create({
      name: 'other',
      config: { type: 'self_hosted' },
    });
    const foreign = sdk(await environmentKey(other.id)).client;
    const missing = 'sess_0000000000000000000000zz';
    for (const id of [session.id, missing]) {
      for (const call of [
        () => foreign.beta.sessions.retrieve(id),
        () => foreign.beta.sessions.events.list(id),
        () => foreign.beta.sessions.events.stream(id),
        () =>
          foreign.beta.sessions.events.send(id, {
            events: [{ type: 'user.tool_result', tool_use_id: use.id }],
          }),
        () => foreign.beta.sessions.events.send(id, { events: [text('hi')] }),
      ]) {
        expect(await rejection(call())).toBeInstanceOf(NotFoundError);
      }
    }
    expect(await rejection(adminClient.beta.sessions.retrieve(missing))).toBeInstanceOf(NotFoundError);
    expect(
      await rejection(workerClient.beta.sessions.create({ agent: agent.id, environment_id: environment.id })),
    ).toBeInstanceOf(AuthenticationError);
  });
});
