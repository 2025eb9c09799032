/**
 * Long polls and event streams on the API Worker as deployed (the `wrangler deploy` bundle
 * under workerd), its database through the Neon driver, the local wsproxy and a proxy that
 * counts every statement the Worker sends PostgreSQL. With LISTEN (the default) a request
 * LISTENs on its own connection and wakes on NOTIFY; with LEASEHOLD_LISTEN=off it re-reads on
 * a growing backoff. Nothing here sleeps: a waiting poll is recognised by the statements it
 * has sent, and time bounds are only the block a poll asked for.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueEnvironmentKey } from '../../src/auth/credentials.js';
import { enqueue } from '../../src/queue/enqueue.js';
import { openTestDb, type TestDb } from '../helpers/db.js';
import { createEnvironment, createSession } from '../helpers/factories.js';
import { type CountProxy, startCountProxy } from '../helpers/pg-count-proxy.js';
import { type RunningWorkers, startWorkers } from '../helpers/workers.js';

const adminKey = `lh_test_admin_${randomBytes(24).toString('hex')}`;
let testDb: TestDb;

interface CountedWorker {
  workers: RunningWorkers;
  counter: CountProxy;
}
let listening: CountedWorker;
let backoff: CountedWorker;

async function countedWorker(settings: Record<string, string>): Promise<CountedWorker> {
  const target = new URL(testDb.url!);
  const counter = await startCountProxy({ host: target.hostname, port: Number(target.port || 5432) });
  const counted = new URL(testDb.url!);
  counted.host = counter.address;
  try {
    const workers = await startWorkers({ databaseUrl: counted.toString(), adminKey, brain: false, settings });
    return { workers, counter };
  } catch (err) {
    await counter.close();
    throw err;
  }
}

beforeAll(async () => {
  testDb = await openTestDb('pg');
  [listening, backoff] = await Promise.all([countedWorker({}), countedWorker({ LEASEHOLD_LISTEN: 'off' })]);
  // Each isolate makes LEASEHOLD_ADMIN_KEY live before the first credential it resolves (one
  // statement, once): done here, so the counts below are a warm isolate's.
  for (const w of [listening, backoff]) {
    const res = await fetch(`${w.workers.baseURL}/v1/environments`, {
      headers: { authorization: `Bearer ${adminKey}` },
    });
    expect(res.status).toBe(200);
  }
}, 60_000);

afterAll(async () => {
  for (const w of [listening, backoff]) {
    await w?.workers.close();
    await w?.counter.close();
  }
  await testDb?.close();
});

/** A fresh environment and key: the isolate has never resolved the key (a lookup is counted). */
async function environment(): Promise<{ environmentId: string; key: string }> {
  const environmentId = await createEnvironment(testDb.db);
  return { environmentId, key: (await issueEnvironmentKey(testDb.db, environmentId, 'test', null)).key };
}

function longPoll(w: CountedWorker, e: { environmentId: string; key: string }) {
  return fetch(`${w.workers.baseURL}/v1/environments/${e.environmentId}/work/poll?block_ms=999`, {
    headers: { authorization: `Bearer ${e.key}`, 'anthropic-worker-id': `worker-${e.environmentId}` },
  });
}

/** Resolves once the proxy has counted `n` statements since `from`: a poll that sent them is waiting. */
async function statementsReach(counter: CountProxy, from: number, n: number): Promise<void> {
  while (counter.statements() - from < n) await new Promise((r) => setImmediate(r));
}

describe('an idle long poll on the Worker', () => {
  it('with LISTEN sends at most 3 statements (key lookup, LISTEN, one read carrying the worker record) over one connection', async () => {
    const e = await environment();
    const statements = listening.counter.statements();
    const connections = listening.counter.connections();
    const res = await longPoll(listening, e);
    expect(await res.text()).toBe('null\n');
    expect(listening.counter.statements() - statements).toBeLessThanOrEqual(3);
    expect(listening.counter.connections() - connections).toBe(1);
  });

  it('with LEASEHOLD_LISTEN=off reads at most four times in its block (a growing backoff), plus the key lookup', async () => {
    const e = await environment();
    const statements = backoff.counter.statements();
    const res = await longPoll(backoff, e);
    expect(await res.text()).toBe('null\n');
    expect(backoff.counter.statements() - statements).toBeLessThanOrEqual(5);
  });
});

describe('a long poll already waiting on the Worker', () => {
  for (const [mode, worker, waiting] of [
    // Key lookup, LISTEN, the first read.
    ['with LISTEN', () => listening, 3],
    // Key lookup, the first read.
    ['with LEASEHOLD_LISTEN=off', () => backoff, 2],
  ] as const) {
    it(`is answered with the item enqueued while it waits (${mode})`, async () => {
      const w = worker();
      const e = await environment();
      const sessionId = await createSession(testDb.db, e.environmentId);
      const from = w.counter.statements();
      const answer = longPoll(w, e);
      await statementsReach(w.counter, from, waiting);
      const { work } = await enqueue(testDb.db, {
        environmentId: e.environmentId,
        sessionId,
        kind: 'tool_exec',
      });
      const res = await answer;
      expect(res.status).toBe(200);
      // Had the wait not heard of it, the poll would have answered null at its deadline.
      expect(await res.json()).toMatchObject({ id: work.id, state: 'queued' });
    });
  }
});

describe('an event stream on the Worker with LISTEN', () => {
  it('delivers an event appended while it waits', async () => {
    const base = listening.workers.baseURL;
    const admin = { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' };
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: admin,
        body: JSON.stringify(body),
      });
      expect(res.status).toBeLessThan(300);
      return (await res.json()) as { id: string };
    };
    const { environmentId } = await environment();
    const agent = await post('/v1/agents', { name: 'stream test', model: 'test-model' });
    const session = await post('/v1/sessions', { agent: agent.id, environment_id: environmentId });
    const ac = new AbortController();
    try {
      const from = listening.counter.statements();
      const res = await fetch(`${base}/v1/sessions/${session.id}/events/stream`, {
        headers: admin,
        signal: ac.signal,
      });
      expect(res.status).toBe(200);
      // The session's read, the LISTEN and the first read of its head: the stream now waits.
      await statementsReach(listening.counter, from, 3);
      await post(`/v1/sessions/${session.id}/events`, {
        events: [{ type: 'user.message', content: [{ type: 'text', text: 'hello' }] }],
      });
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let text = '';
      while (!text.includes('event: user.message')) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
      expect(text).toContain('event: user.message');
    } finally {
      ac.abort();
    }
  });
});
