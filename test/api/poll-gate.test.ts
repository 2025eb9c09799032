import { describe, expect, it, vi } from 'vitest';
import { createApp } from '../../src/api/app.js';
import { ApiError } from '../../src/api/errors.js';
import {
  MAX_LONG_POLLS_PER_KEY,
  MAX_LONG_POLLS_PER_PROCESS,
  PollGate,
  RETRY_AFTER_SECONDS,
} from '../../src/api/poll-gate.js';
import type { ApiDeps } from '../../src/api/types.js';
import { WakeHub } from '../../src/api/wake.js';
import { connectPg } from '../../src/db/drivers/node-pg.js';
import { enqueue } from '../../src/queue/index.js';
import { environmentWithKey } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';

/** The 429 a refused admission throws. */
function refusal(admit: () => unknown): ApiError {
  try {
    admit();
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('admitted, expected a 429');
}

describe('PollGate', () => {
  it('defaults to 64 long polls per key and 1,024 per process', () => {
    const gate = new PollGate();
    expect([gate.perKey, gate.perProcess]).toEqual([MAX_LONG_POLLS_PER_KEY, MAX_LONG_POLLS_PER_PROCESS]);
    expect([MAX_LONG_POLLS_PER_KEY, MAX_LONG_POLLS_PER_PROCESS, RETRY_AFTER_SECONDS]).toEqual([64, 1_024, 1]);
  });

  it('admits up to the per-key cap; the next is a 429 rate_limit_error with retry-after 1', () => {
    const gate = new PollGate({ perKey: 3, perProcess: 100 });
    for (let i = 0; i < 3; i++) gate.admit('key_a');
    const err = refusal(() => gate.admit('key_a'));
    expect(err.status).toBe(429);
    expect(err.type).toBe('rate_limit_error');
    expect(err.options.headers).toEqual({ 'retry-after': '1' });
    expect(err.message).toMatch(/environment key \(at most 3\)/);
    expect(gate.open('key_a')).toBe(3);
    expect(gate.open()).toBe(3);
  });

  it('keys are independent: one key at its cap refuses nothing of another', () => {
    const gate = new PollGate({ perKey: 2, perProcess: 100 });
    gate.admit('key_a');
    gate.admit('key_a');
    expect(() => gate.admit('key_a')).toThrow(ApiError);
    gate.admit('key_b');
    gate.admit('key_b');
    expect([gate.open('key_a'), gate.open('key_b'), gate.open()]).toEqual([2, 2, 4]);
  });

  it('the per-process cap refuses every key once the app holds that many', () => {
    const gate = new PollGate({ perKey: 2, perProcess: 3 });
    gate.admit('key_a');
    gate.admit('key_a');
    gate.admit('key_b');
    const err = refusal(() => gate.admit('key_c'));
    expect(err.status).toBe(429);
    expect(err.message).toMatch(/on this server \(at most 3\)/);
    expect(gate.open('key_c')).toBe(0);
  });

  it('a release frees exactly one slot, however often it is called', () => {
    const gate = new PollGate({ perKey: 2, perProcess: 2 });
    const first = gate.admit('key_a');
    gate.admit('key_a');
    first();
    first();
    expect(gate.open('key_a')).toBe(1);
    gate.admit('key_a');
    expect(() => gate.admit('key_a')).toThrow(ApiError);
    expect(gate.open()).toBe(2);
  });

  it('forgets a key once its last slot is released', () => {
    const gate = new PollGate({ perKey: 1, perProcess: 1 });
    gate.admit('key_a')();
    expect(gate.open('key_a')).toBe(0);
    expect(gate.open()).toBe(0);
    gate.admit('key_b');
  });

  it.each([0, -1, 1.5, Number.NaN])('refuses a cap of %s', (cap) => {
    expect(() => new PollGate({ perKey: cap })).toThrow(RangeError);
    expect(() => new PollGate({ perProcess: cap })).toThrow(RangeError);
  });
});

describe('PollGate in GET /work/poll', () => {
  const t = useTestDb('pg');
  const pollPath = (env: string, query = '?block_ms=999') => `/v1/environments/${env}/work/poll${query}`;

  /** An app whose deps come per request (as on Workers), so a test can hand one request broken ones. */
  function gatedApp(gate: PollGate) {
    const hub = new WakeHub();
    const app = createApp((env) => env as ApiDeps, { pollGate: gate });
    const deps: ApiDeps = { db: t.db, wake: hub, log: { warn: () => {}, error: () => {} } };
    const poll = (env: string, key: string, init: RequestInit = {}, query?: string, with_ = deps) =>
      Promise.resolve(
        app.request(pollPath(env, query), { ...init, headers: { authorization: `Bearer ${key}` } }, with_),
      );
    return { app, hub, deps, poll };
  }

  it('a long poll releases its slot when the client goes away', async () => {
    const gate = new PollGate({ perKey: 1, perProcess: 10 });
    const { poll } = gatedApp(gate);
    const e = await environmentWithKey(t.db);
    const controller = new AbortController();
    const pending = poll(e.environmentId, e.key, { signal: controller.signal });
    await vi.waitFor(() => expect(gate.open(e.keyId)).toBe(1), { timeout: 5_000, interval: 5 });
    controller.abort();
    expect((await pending).status).toBe(200);
    expect(gate.open()).toBe(0);
    // The slot is really free: the key's only slot admits the next long poll.
    const next = poll(e.environmentId, e.key, {}, '?block_ms=1');
    expect((await next).status).toBe(200);
  });

  it('a long poll releases its slot when its query fails (500)', async () => {
    const gate = new PollGate({ perKey: 1, perProcess: 10 });
    const { poll, deps } = gatedApp(gate);
    const e = await environmentWithKey(t.db);
    // One good poll puts the key in the app's credential cache, so the broken pool is met by
    // the poll's own query, after admission.
    expect((await poll(e.environmentId, e.key, {}, '')).status).toBe(200);
    const closed = connectPg(t.url!);
    await closed.close();
    const res = await poll(e.environmentId, e.key, {}, '?block_ms=999', { ...deps, db: closed.db });
    expect(res.status).toBe(500);
    expect(gate.open()).toBe(0);
    expect((await poll(e.environmentId, e.key, {}, '?block_ms=1')).status).toBe(200);
  });

  it('a long poll releases its slot when it answers, with work or with null', async () => {
    const gate = new PollGate({ perKey: 1, perProcess: 10 });
    const { poll } = gatedApp(gate);
    const e = await environmentWithKey(t.db);
    const { work } = await enqueue(t.db, { ...e, kind: 'tool_exec' });
    const found = await poll(e.environmentId, e.key, {}, '?block_ms=999');
    expect(((await found.json()) as { id: string }).id).toBe(work.id);
    expect(gate.open()).toBe(0);
    const empty = await poll(e.environmentId, e.key, {}, '?block_ms=1');
    expect(await empty.json()).toBeNull();
    expect(gate.open()).toBe(0);
  });
});
