/**
 * Conformance with the official SDK: the real Node server (`functions/node.ts` as `npm start` runs it) as a child
 * process on a fresh database, driven by `@anthropic-ai/sdk` 1.14.0 over loopback HTTP.
 *
 * Fixtures (environments, sessions, environment keys, work items) are written through the
 * library functions on this file's own connection; everything under test goes through the
 * SDK. The clients' `fetch` is the platform fetch behind a recorder that notes each request
 * the SDK sends (method, path, query, body, status) so a test can count retries; one worker
 * test also holds a request back for a while. No response is ever made up: the server
 * answers every request.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Anthropic, {
  AuthenticationError,
  ConflictError,
  NotFoundError,
  PreconditionFailedError,
} from '@anthropic-ai/sdk';
import { BetaHeartbeatPreconditionFailedError } from '@anthropic-ai/sdk/resources/beta/environments/work';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueEnvironmentKey } from '../../src/auth/credentials.js';
import { enqueue } from '../../src/queue/enqueue.js';
import { openTestDb, type TestDb } from '../helpers/db.js';
import { ageReservation, createEnvironment, createSession, readWork } from '../helpers/factories.js';
import { type RunningServer, startServer } from '../helpers/server.js';

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
/** The SDK's first retry waits ~0.5 s (less up to 25 % jitter): a single try is far below this. */
const UNDER_ONE_RETRY_MS = 350;

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

// ---------------------------------------------------------------------------------------------
// Clients and fixtures
// ---------------------------------------------------------------------------------------------

interface Sent {
  method: string;
  path: string;
  query: URLSearchParams;
  body: string | null;
  /** The response status; null while in flight or when the request failed on the client. */
  status: number | null;
  sentAt: number;
}

interface LogLine {
  level: 'error' | 'warn' | 'info' | 'debug';
  message: string;
  rest: unknown[];
}

interface ClientOptions {
  /** Holds a request back until the returned promise settles, then sends it unchanged. */
  hold?: (method: string, path: string) => Promise<void> | undefined;
}

interface RecordedClient {
  client: Anthropic;
  sent: Sent[];
  logs: LogLine[];
  /** The requests sent with this method to a path ending in `suffix`. */
  to(method: string, suffix: string): Sent[];
}

/** An SDK client with `key` as its credential (sent as `Authorization: Bearer`), default retries. */
function sdk(key: string, options: ClientOptions = {}): RecordedClient {
  const sent: Sent[] = [];
  const logs: LogLine[] = [];
  const recordingFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : input.toString());
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    const entry: Sent = {
      method,
      path: url.pathname,
      query: url.searchParams,
      body: typeof init?.body === 'string' ? init.body : null,
      status: null,
      sentAt: Date.now(),
    };
    sent.push(entry);
    const held = options.hold?.(method, url.pathname);
    if (held) await held;
    const response = await fetch(input, init);
    entry.status = response.status;
    return response;
  };
  const log =
    (level: LogLine['level']) =>
    (message: string, ...rest: unknown[]) =>
      void logs.push({ level, message, rest });
  const client = new Anthropic({
    apiKey: key,
    baseURL: server.baseURL,
    maxRetries: 2,
    fetch: recordingFetch,
    logger: { error: log('error'), warn: log('warn'), info: log('info'), debug: log('debug') },
    logLevel: 'info',
  });
  return {
    client,
    sent,
    logs,
    to: (method, suffix) => sent.filter((s) => s.method === method && s.path.endsWith(suffix)),
  };
}

/** A self-hosted environment with a live environment key. */
async function environment(): Promise<{ environmentId: string; key: string }> {
  const environmentId = await createEnvironment(testDb.db, 'self_hosted');
  const { key } = await issueEnvironmentKey(testDb.db, environmentId, 'conformance', null);
  return { environmentId, key };
}

/** Enqueues `count` tool_exec items, one session each, oldest first; returns their ids. */
async function enqueueWork(
  environmentId: string,
  count = 1,
  options: { metadata?: Record<string, string>; traceparent?: string } = {},
): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const sessionId = await createSession(testDb.db, environmentId);
    const { work } = await enqueue(testDb.db, {
      environmentId,
      sessionId,
      kind: 'tool_exec',
      metadata: options.metadata,
      traceContext: options.traceparent ? { traceparent: options.traceparent } : null,
    });
    ids.push(work.id);
  }
  return ids;
}

/** Polls, acks and claims (NO_HEARTBEAT) the environment's next item through the SDK. */
async function activeItem(
  envClient: Anthropic,
  environmentId: string,
): Promise<{ id: string; lastHeartbeat: string }> {
  const [id] = await enqueueWork(environmentId);
  const work = envClient.beta.environments.work;
  const polled = await work.poll(environmentId);
  expect(polled?.id).toBe(id);
  await work.ack(id!, { environment_id: environmentId });
  const hb = await work.heartbeat(id!, {
    environment_id: environmentId,
    expected_last_heartbeat: 'NO_HEARTBEAT',
  });
  return { id: id!, lastHeartbeat: hb.last_heartbeat };
}

/** Waits (bounded) until `check` holds; fails naming `what` and the last value seen. */
async function until<T>(what: string, read: () => Promise<T>, check: (v: T) => boolean, ms = 10_000) {
  const deadline = Date.now() + ms;
  let last: T;
  for (;;) {
    last = await read();
    if (check(last)) return last;
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${ms} ms waiting for ${what}; last seen: ${JSON.stringify(last)}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
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

// ---------------------------------------------------------------------------------------------
// The endpoints, each with the credential it accepts
// ---------------------------------------------------------------------------------------------

describe('work endpoints through the SDK', () => {
  it('poll of an empty queue resolves to exactly null, blocking or not', async () => {
    const { environmentId, key } = await environment();
    const { client } = sdk(key);
    expect(await client.beta.environments.work.poll(environmentId)).toBe(null);
    expect(await client.beta.environments.work.poll(environmentId, { block_ms: 50 })).toBe(null);
  });

  it('poll, ack and heartbeat with the environment key take an item queued → starting → active; retrieve and stats with the admin key see each step', async () => {
    const { environmentId, key } = await environment();
    const [id] = await enqueueWork(environmentId);
    const env = sdk(key).client.beta.environments.work;
    const admin = sdk(server.adminKey).client.beta.environments.work;

    const polled = await env.poll(environmentId, { 'Anthropic-Worker-ID': 'conformance-w1' });
    expect(polled).toMatchObject({
      type: 'work',
      id,
      environment_id: environmentId,
      state: 'queued',
      data: { type: 'session' },
      secret: null,
      acknowledged_at: null,
    });
    expect(await admin.stats(environmentId)).toEqual({
      type: 'work_queue_stats',
      depth: 0,
      pending: 1,
      workers_polling: 1,
      oldest_queued_at: expect.any(String),
    });

    const acked = await env.ack(id!, { environment_id: environmentId });
    expect(acked).toMatchObject({ id, state: 'starting', acknowledged_at: expect.any(String) });

    const first = await env.heartbeat(id!, {
      environment_id: environmentId,
      expected_last_heartbeat: 'NO_HEARTBEAT',
    });
    expect(first).toEqual({
      type: 'work_heartbeat',
      last_heartbeat: expect.any(String),
      lease_extended: true,
      state: 'active',
      ttl_seconds: 30,
    });
    const second = await env.heartbeat(id!, {
      environment_id: environmentId,
      expected_last_heartbeat: first.last_heartbeat,
    });
    expect(second).toMatchObject({ state: 'active', lease_extended: true });
    expect(second.last_heartbeat).not.toBe(first.last_heartbeat);

    const retrieved = await admin.retrieve(id!, { environment_id: environmentId });
    expect(retrieved).toMatchObject({
      id,
      state: 'active',
      latest_heartbeat_at: second.last_heartbeat,
      started_at: expect.any(String),
      stopped_at: null,
      secret: null,
    });
    expect(await admin.stats(environmentId)).toMatchObject({ depth: 0, pending: 0, oldest_queued_at: null });
  });

  it('stats with the admin key counts queued items as depth and names the oldest', async () => {
    const { environmentId } = await environment();
    await enqueueWork(environmentId, 3);
    const stats = await sdk(server.adminKey).client.beta.environments.work.stats(environmentId);
    expect(stats).toMatchObject({ type: 'work_queue_stats', depth: 3, pending: 0 });
    expect(stats.oldest_queued_at).toEqual(expect.any(String));
  });

  it('update with the admin key upserts string values, deletes null ones and keeps the rest', async () => {
    const { environmentId } = await environment();
    const [id] = await enqueueWork(environmentId, 1, { metadata: { keep: 'k', drop: 'd', change: 'old' } });
    const admin = sdk(server.adminKey).client.beta.environments.work;
    const updated = await admin.update(id!, {
      environment_id: environmentId,
      metadata: { drop: null, change: 'new', add: 'a' },
    });
    expect(updated.metadata).toEqual({ keep: 'k', change: 'new', add: 'a' });
    expect((await admin.retrieve(id!, { environment_id: environmentId })).metadata).toEqual({
      keep: 'k',
      change: 'new',
      add: 'a',
    });
  });

  it('stop accepts the admin key (graceful: active → stopping) and the environment key (force: → stopped), and resolves to the work item', async () => {
    const { environmentId, key } = await environment();
    const env = sdk(key).client.beta.environments.work;
    const admin = sdk(server.adminKey).client.beta.environments.work;
    const { id, lastHeartbeat } = await activeItem(sdk(key).client, environmentId);

    // The SDK types work.stop() as BetaSelfHostedWork: the item as it stands after the stop.
    const stopping = await admin.stop(id, { environment_id: environmentId });
    expect(stopping).toMatchObject({
      type: 'work',
      id,
      environment_id: environmentId,
      state: 'stopping',
      stop_requested_at: expect.any(String),
      stopped_at: null,
    });
    expect(await admin.retrieve(id, { environment_id: environmentId })).toEqual(stopping);
    const told = await env.heartbeat(id, {
      environment_id: environmentId,
      expected_last_heartbeat: lastHeartbeat,
    });
    expect(told).toMatchObject({ state: 'stopping', lease_extended: false, last_heartbeat: lastHeartbeat });

    const stopped = await env.stop(id, { environment_id: environmentId, force: true });
    expect(stopped).toMatchObject({
      type: 'work',
      id,
      state: 'stopped',
      stop_requested_at: stopping.stop_requested_at,
      stopped_at: expect.any(String),
    });
    expect(await admin.retrieve(id, { environment_id: environmentId })).toEqual(stopped);
  });

  it('a graceful stop of a queued item resolves to it stopped outright', async () => {
    const { environmentId } = await environment();
    const [id] = await enqueueWork(environmentId);
    const admin = sdk(server.adminKey).client.beta.environments.work;
    expect(await admin.stop(id!, { environment_id: environmentId })).toMatchObject({
      id,
      state: 'stopped',
      stop_requested_at: expect.any(String),
      stopped_at: expect.any(String),
    });
  });

  it("poll's reclaim_older_than_ms is the polling worker's own window: a short one is offered an item another worker reserved with the default, under a new id, and the first worker's ack of the old id is a 404", async () => {
    const { environmentId, key } = await environment();
    const [id] = await enqueueWork(environmentId);
    const first = sdk(key).client.beta.environments.work;
    expect((await first.poll(environmentId))?.id).toBe(id);
    // The first worker went quiet 400 ms ago without acking (its window was the default 5 s).
    await ageReservation(testDb.db, id!, 400);
    expect(await first.poll(environmentId)).toBe(null);

    const host = sdk(server.adminKey);
    const poller = host.client.beta.environments.work.poller({
      environmentId,
      environmentKey: key,
      workerId: 'conformance-short-window',
      reclaimOlderThanMs: 100,
      drain: true,
    });
    const taken: string[] = [];
    for await (const item of poller) taken.push(item.id);
    expect(taken).toHaveLength(1);
    expect(taken[0]).not.toBe(id);
    expect(host.to('GET', '/work/poll')[0]!.query.get('reclaim_older_than_ms')).toBe('100');

    const stale = await rejection(first.ack(id!, { environment_id: environmentId }));
    expect(stale).toBeInstanceOf(NotFoundError);
    const admin = host.client.beta.environments.work;
    expect(await admin.retrieve(taken[0]!, { environment_id: environmentId })).toMatchObject({
      state: 'stopped',
      acknowledged_at: expect.any(String),
    });
  });

  it('list, poll, ack and heartbeat reject an API key; retrieve and update reject the environment key (401, sent once)', async () => {
    const { environmentId, key } = await environment();
    const [id] = await enqueueWork(environmentId);
    const admin = sdk(server.adminKey);
    const env = sdk(key);
    const a = admin.client.beta.environments.work;
    const e = env.client.beta.environments.work;
    const calls: [string, () => Promise<unknown>][] = [
      ['list with the admin key', () => a.list(environmentId)],
      ['poll with the admin key', () => a.poll(environmentId)],
      ['ack with the admin key', () => a.ack(id!, { environment_id: environmentId })],
      [
        'heartbeat with the admin key',
        () => a.heartbeat(id!, { environment_id: environmentId, expected_last_heartbeat: 'NO_HEARTBEAT' }),
      ],
      ['retrieve with the environment key', () => e.retrieve(id!, { environment_id: environmentId })],
      [
        'update with the environment key',
        () => e.update(id!, { environment_id: environmentId, metadata: { a: 'b' } }),
      ],
    ];
    for (const [what, call] of calls) {
      const err = await rejection(call());
      expect(err, what).toBeInstanceOf(AuthenticationError);
    }
    // 401 is final: one request per call.
    expect(admin.sent.length + env.sent.length).toBe(calls.length);
    // Nothing happened to the item.
    expect((await readWork(testDb.db, id!))?.state).toBe('queued');
  });
});

// ---------------------------------------------------------------------------------------------
// Pagination
// ---------------------------------------------------------------------------------------------

describe('work.list pagination', () => {
  it('for await with limit 3 over 7 items visits every item once, newest first, in 3 requests, and ends', async () => {
    const { environmentId, key } = await environment();
    const ids = await enqueueWork(environmentId, 7);
    const env = sdk(key);
    const seen: string[] = [];
    for await (const item of env.client.beta.environments.work.list(environmentId, { limit: 3 })) {
      expect(item.environment_id).toBe(environmentId);
      seen.push(item.id);
      if (seen.length > 7) throw new Error('the list did not end');
    }
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual([...ids].reverse());
    const requests = env.to('GET', '/work');
    expect(requests.map((r) => r.query.get('limit'))).toEqual(['3', '3', '3']);
    expect(requests[0]!.query.get('page')).toBe(null);
    expect(requests[1]!.query.get('page')).toEqual(expect.any(String));
  });

  it('an exactly full last page carries next_page null: 6 items at limit 3 take 2 requests', async () => {
    const { environmentId, key } = await environment();
    const ids = await enqueueWork(environmentId, 6);
    const env = sdk(key);
    const pages: string[][] = [];
    const first = await env.client.beta.environments.work.list(environmentId, { limit: 3 });
    for await (const page of first.iterPages()) {
      pages.push(page.data.map((w) => w.id));
      if (pages.length > 3) throw new Error('the list did not end');
    }
    expect(pages).toEqual([ids.slice(3).reverse(), ids.slice(0, 3).reverse()]);
    expect(env.to('GET', '/work')).toHaveLength(2);
  });
});

// ---------------------------------------------------------------------------------------------
// Errors the SDK must not retry
// ---------------------------------------------------------------------------------------------

describe('final errors', () => {
  it('a heartbeat with a stale expected_last_heartbeat raises BetaHeartbeatPreconditionFailedError with current_state, sent once', async () => {
    const { environmentId, key } = await environment();
    const env = sdk(key);
    const work = env.client.beta.environments.work;
    const { id, lastHeartbeat: stale } = await activeItem(env.client, environmentId);
    const fresh = await work.heartbeat(id, { environment_id: environmentId, expected_last_heartbeat: stale });

    const before = env.to('POST', '/heartbeat').length;
    const started = Date.now();
    const err = await rejection(
      work.heartbeat(id, { environment_id: environmentId, expected_last_heartbeat: stale }),
    );
    const elapsed = Date.now() - started;

    expect(err).toBeInstanceOf(BetaHeartbeatPreconditionFailedError);
    expect(err).toBeInstanceOf(PreconditionFailedError);
    const e = err as BetaHeartbeatPreconditionFailedError;
    expect(e.status).toBe(412);
    expect(e.errorCode).toBe('heartbeat_precondition_failed');
    expect(e.details.current_state).toEqual({
      state: 'active',
      last_heartbeat: fresh.last_heartbeat,
      lease_extended: false,
      ttl_seconds: expect.any(Number),
    });
    expect(e.requestID).toMatch(/^req_/);
    expect(env.to('POST', '/heartbeat').length - before).toBe(1);
    expect(elapsed).toBeLessThan(UNDER_ONE_RETRY_MS);
  });

  it('stop of a stopped item raises ConflictError at once: x-should-retry false, one request', async () => {
    const { environmentId, key } = await environment();
    const { id } = await activeItem(sdk(key).client, environmentId);
    const admin = sdk(server.adminKey);
    await admin.client.beta.environments.work.stop(id, { environment_id: environmentId, force: true });

    const started = Date.now();
    const err = await rejection(
      admin.client.beta.environments.work.stop(id, { environment_id: environmentId }),
    );
    const elapsed = Date.now() - started;

    expect(err).toBeInstanceOf(ConflictError);
    expect((err as ConflictError).headers?.get('x-should-retry')).toBe('false');
    expect(admin.to('POST', '/stop')).toHaveLength(2);
    expect(elapsed).toBeLessThan(UNDER_ONE_RETRY_MS);
  });
});

// ---------------------------------------------------------------------------------------------
// Scoping across environments
// ---------------------------------------------------------------------------------------------

describe('cross-environment access', () => {
  it("environment B's key is refused (401) on environment A's poll, list, ack, heartbeat and stop, and changes nothing", async () => {
    const a = await environment();
    const b = await environment();
    const [id] = await enqueueWork(a.environmentId);
    const other = sdk(b.key);
    const w = other.client.beta.environments.work;
    const env = a.environmentId;
    const calls: [string, () => Promise<unknown>][] = [
      ['poll', () => w.poll(env)],
      ['list', () => w.list(env)],
      ['ack', () => w.ack(id!, { environment_id: env })],
      ['heartbeat', () => w.heartbeat(id!, { environment_id: env, expected_last_heartbeat: 'NO_HEARTBEAT' })],
      ['stop', () => w.stop(id!, { environment_id: env, force: true })],
    ];
    for (const [what, call] of calls) {
      expect(await rejection(call()), what).toBeInstanceOf(AuthenticationError);
    }
    expect(other.sent).toHaveLength(calls.length);
    const row = await readWork(testDb.db, id!);
    expect(row).toMatchObject({ state: 'queued', claims: 0 });
  });

  it("retrieve of environment A's work id under environment B with the admin key is 404", async () => {
    const a = await environment();
    const b = await environment();
    const [id] = await enqueueWork(a.environmentId);
    const admin = sdk(server.adminKey).client.beta.environments.work;
    const err = await rejection(admin.retrieve(id!, { environment_id: b.environmentId }));
    expect(err).toBeInstanceOf(NotFoundError);
    // The same id under its own environment is there.
    expect((await admin.retrieve(id!, { environment_id: a.environmentId })).id).toBe(id);
  });
});

// ---------------------------------------------------------------------------------------------
// Long poll
// ---------------------------------------------------------------------------------------------

describe('long poll', () => {
  it('poll with block_ms 999 returns an item enqueued ~150 ms into the wait, within the wait, with its traceparent header', async () => {
    const { environmentId, key } = await environment();
    const work = sdk(key).client.beta.environments.work;
    let enqueued: string | undefined;
    const started = Date.now();
    const polling = work.poll(environmentId, { block_ms: 999 }).withResponse();
    const enqueuing = new Promise<void>((resolve, reject) =>
      setTimeout(() => {
        enqueueWork(environmentId, 1, { traceparent: TRACEPARENT }).then(([id]) => {
          enqueued = id;
          resolve();
        }, reject);
      }, 150),
    );
    const { data, response } = await polling;
    const elapsed = Date.now() - started;
    await enqueuing;

    expect(data?.id).toBe(enqueued);
    expect(data?.state).toBe('queued');
    expect(elapsed).toBeGreaterThanOrEqual(140);
    expect(elapsed).toBeLessThan(900);
    expect(response.headers.get('traceparent')).toBe(TRACEPARENT);
  });
});

// ---------------------------------------------------------------------------------------------
// The runner helpers
// ---------------------------------------------------------------------------------------------

describe('WorkPoller', () => {
  it('with drain: consumes 5 items end to end, each acked then auto-stopped (graceful → stopped), then ends', async () => {
    const { environmentId, key } = await environment();
    const ids = await enqueueWork(environmentId, 5);
    const host = sdk(server.adminKey);
    const admin = host.client.beta.environments.work;
    const poller = host.client.beta.environments.work.poller({
      environmentId,
      environmentKey: key,
      workerId: 'conformance-poller',
      drain: true,
    });

    const consumed: string[] = [];
    const started = Date.now();
    for await (const item of poller) {
      consumed.push(item.id);
      // Inside the loop body the item is acked and not yet stopped.
      expect((await admin.retrieve(item.id, { environment_id: environmentId })).state).toBe('starting');
      if (consumed.length > 5) throw new Error('the poller handed out more items than were queued');
    }
    const elapsed = Date.now() - started;

    expect(consumed).toEqual(ids);
    for (const id of ids) {
      const w = await admin.retrieve(id, { environment_id: environmentId });
      // docs/wire.md ("Where Leasehold decides"): a graceful stop of a
      // starting item stops it outright.
      expect(w, id).toMatchObject({ state: 'stopped', acknowledged_at: expect.any(String) });
    }
    // Each item: ack, then graceful stop `{}` with the environment key, each once.
    const acks = host.to('POST', '/ack');
    const stops = host.to('POST', '/stop');
    expect(acks.map((s) => s.status)).toEqual([200, 200, 200, 200, 200]);
    expect(stops.map((s) => [s.body, s.status])).toEqual(ids.map(() => ['{}', 200]));
    // Six polls: five items and the empty one that ended the drain (a long poll, ~1 s).
    const polls = host.to('GET', '/work/poll');
    expect(polls).toHaveLength(6);
    expect(polls.every((p) => p.query.get('block_ms') === '999')).toBe(true);
    expect(elapsed).toBeLessThan(5_000);
    expect((await admin.stats(environmentId)).depth).toBe(0);
  });
});

describe('EnvironmentWorker', () => {
  let workdir: string;
  beforeAll(async () => {
    workdir = await mkdtemp(path.join(tmpdir(), 'leasehold-worker-'));
  });
  afterAll(async () => {
    await rm(workdir, { recursive: true, force: true });
  });

  /** Runs a worker until `done`, then aborts it and waits (bounded) for run() to return. */
  async function withWorker(
    host: RecordedClient,
    environmentId: string,
    key: string,
    body: () => Promise<void>,
  ): Promise<void> {
    const ac = new AbortController();
    const worker = host.client.beta.environments.work.worker({
      environmentId,
      environmentKey: key,
      workdir,
      workerId: 'conformance-worker',
      memorySyncIntervalMs: null,
    });
    const running = worker.run(ac.signal);
    try {
      await body();
    } finally {
      ac.abort();
      await Promise.race([
        running.catch(() => {}),
        new Promise((_, reject) =>
          setTimeout(() => reject(new Error('the worker did not end within 5 s of its abort')), 5_000),
        ),
      ]);
    }
  }

  it('claims, fails the session fetch (404: no sessions API here), force-stops the item and keeps polling', async () => {
    const { environmentId, key } = await environment();
    const [id] = await enqueueWork(environmentId);
    const host = sdk(server.adminKey);
    await withWorker(host, environmentId, key, async () => {
      await until(
        'the worker to stop the item',
        () => readWork(testDb.db, id!),
        (w) => w?.state === 'stopped',
      );
      await until(
        'the worker to poll again',
        async () => host.to('GET', '/work/poll').length,
        (n) => n >= 2,
      );
    });

    expect(host.to('POST', `/work/${id}/ack`).map((s) => s.status)).toEqual([200]);
    const session = host.sent.filter((s) => s.path.startsWith('/v1/sessions/'));
    expect(session.map((s) => [s.method, s.status])).toEqual([['GET', 404]]);
    expect(host.to('POST', `/work/${id}/stop`).map((s) => [s.body, s.status])).toEqual([
      ['{"force":true}', 200],
    ]);
    expect(
      host.logs.some((l) => l.message === 'work item failed' && /404/.test(JSON.stringify(l.rest))),
    ).toBe(true);
  });

  it('with its session fetch held: the first NO_HEARTBEAT beat claims the item, and a graceful API stop ends in the worker force-stopping it', async () => {
    const { environmentId, key } = await environment();
    const [id] = await enqueueWork(environmentId);
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const host = sdk(server.adminKey, {
      hold: (method, p) => (method === 'GET' && p.startsWith('/v1/sessions/') ? released : undefined),
    });
    const admin = sdk(server.adminKey).client.beta.environments.work;

    await withWorker(host, environmentId, key, async () => {
      try {
        // The heartbeat loop starts before the session fetch: the claim lands while it is held.
        const beats = await until(
          'the first heartbeat to be answered',
          async () => host.to('POST', `/work/${id}/heartbeat`),
          (b) => b.some((s) => s.status !== null),
        );
        expect(beats.map((b) => [b.query.get('expected_last_heartbeat'), b.status])).toEqual([
          ['NO_HEARTBEAT', 200],
        ]);
        expect(await admin.retrieve(id!, { environment_id: environmentId })).toMatchObject({
          state: 'active',
          latest_heartbeat_at: expect.any(String),
          started_at: expect.any(String),
        });
        expect(beats[0]!.query.has('desired_ttl_seconds')).toBe(false);
        expect(host.sent.filter((s) => s.path.startsWith('/v1/sessions/')).map((s) => s.status)).toEqual([
          null,
        ]);

        await admin.stop(id!, { environment_id: environmentId });
        expect((await admin.retrieve(id!, { environment_id: environmentId })).state).toBe('stopping');
      } finally {
        release();
      }
      await until(
        'the worker to force-stop the item',
        () => admin.retrieve(id!, { environment_id: environmentId }),
        (w) => w.state === 'stopped',
      );
    });

    // stopping → stopped takes a force stop (a graceful one would be a 409): the worker's.
    expect(host.to('POST', `/work/${id}/stop`).map((s) => [s.body, s.status])).toEqual([
      ['{"force":true}', 200],
    ]);
    expect(host.sent.filter((s) => s.path.startsWith('/v1/sessions/')).map((s) => s.status)).toEqual([404]);
  });

  it('the heartbeat protocol as the worker runs it learns of a graceful stop: state stopping, lease_extended false', async () => {
    const { environmentId, key } = await environment();
    const env = sdk(key).client.beta.environments.work;
    const admin = sdk(server.adminKey).client.beta.environments.work;
    const { id, lastHeartbeat } = await activeItem(sdk(key).client, environmentId);

    // The worker's loop: echo last_heartbeat exactly, never send desired_ttl_seconds.
    let last = lastHeartbeat;
    for (let i = 0; i < 3; i++) {
      const hb = await env.heartbeat(id, { environment_id: environmentId, expected_last_heartbeat: last });
      expect(hb).toMatchObject({ state: 'active', lease_extended: true, ttl_seconds: 30 });
      expect(hb.last_heartbeat).not.toBe(last);
      last = hb.last_heartbeat;
    }

    await admin.stop(id, { environment_id: environmentId });
    const told = await env.heartbeat(id, { environment_id: environmentId, expected_last_heartbeat: last });
    expect(told).toMatchObject({ state: 'stopping', lease_extended: false });

    // What the worker does next: force-stop with its own credential.
    await env.stop(id, { environment_id: environmentId, force: true });
    expect((await admin.retrieve(id, { environment_id: environmentId })).state).toBe('stopped');
    const after = await env.heartbeat(id, { environment_id: environmentId, expected_last_heartbeat: last });
    expect(after).toMatchObject({ state: 'stopped', lease_extended: false });
  });
});
