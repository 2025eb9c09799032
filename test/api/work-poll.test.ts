import { sql } from 'drizzle-orm';
import { describe, expect, it, vi } from 'vitest';
import { createApp } from '../../src/api/app.js';
import { PollGate } from '../../src/api/poll-gate.js';
import { WakeHub } from '../../src/api/wake.js';
import { issueEnvironmentKey } from '../../src/auth/credentials.js';
import { DEFAULT_RECLAIM_MS, enqueue } from '../../src/queue/index.js';
import { environmentWithKey, testApi } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import {
  ageReservation,
  createEnvironment,
  lapseLease,
  leaseWindowMs,
  readWork,
} from '../helpers/factories.js';

const TRACE = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tracestate: 'k=v' };
const WIRE_FIELDS = [
  'acknowledged_at',
  'created_at',
  'data',
  'environment_id',
  'id',
  'latest_heartbeat_at',
  'metadata',
  'secret',
  'started_at',
  'state',
  'stop_requested_at',
  'stopped_at',
  'type',
];

describe('GET /work/poll', () => {
  const t = useTestDb('pg');
  const api = () => testApi(t.db);
  const pollPath = (env: string, query = '') => `/v1/environments/${env}/work/poll${query}`;

  it('an empty queue answers 200 with the JSON body null', async () => {
    const e = await environmentWithKey(t.db);
    const res = await api().call('GET', pollPath(e.environmentId), { key: e.key });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('request-id')).toMatch(/^req_[0-9a-z]{24}$/);
    expect(await res.text()).toBe('null\n');
  });

  it('hands out the item with exactly the 13 wire fields and its trace context as headers', async () => {
    const e = await environmentWithKey(t.db);
    const { work } = await enqueue(t.db, { ...e, kind: 'tool_exec', traceContext: TRACE });
    const res = await api().call('GET', pollPath(e.environmentId), { key: e.key });
    expect(res.status).toBe(200);
    expect(res.headers.get('traceparent')).toBe(TRACE.traceparent);
    expect(res.headers.get('tracestate')).toBe(TRACE.tracestate);
    const body = (await res.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(WIRE_FIELDS);
    expect(body).toMatchObject({
      type: 'work',
      id: work.id,
      environment_id: e.environmentId,
      data: { type: 'session', id: e.sessionId },
      state: 'queued',
      metadata: {},
      secret: null,
      acknowledged_at: null,
      latest_heartbeat_at: null,
      started_at: null,
      stop_requested_at: null,
      stopped_at: null,
    });
    expect(body.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$/);
  });

  it('sends no traceparent header for an item enqueued without a span', async () => {
    const e = await environmentWithKey(t.db);
    await enqueue(t.db, { ...e, kind: 'tool_exec', traceContext: null });
    const res = await api().call('GET', pollPath(e.environmentId), { key: e.key });
    expect(res.headers.get('traceparent')).toBeNull();
  });

  it('a model_turn or a cloud environment is never offered', async () => {
    const e = await environmentWithKey(t.db);
    await enqueue(t.db, { ...e, kind: 'model_turn' });
    expect(await (await api().call('GET', pollPath(e.environmentId), { key: e.key })).json()).toBeNull();
    const cloud = await environmentWithKey(t.db, 'cloud');
    await enqueue(t.db, { ...cloud, kind: 'tool_exec' });
    expect(
      await (await api().call('GET', pollPath(cloud.environmentId), { key: cloud.key })).json(),
    ).toBeNull();
  });

  it.each(['0', '-5', 'abc', '1.5', '300&block_ms=400', '99999999999999999999'])(
    'block_ms=%s is a 400 invalid_request_error',
    async (value) => {
      const e = await environmentWithKey(t.db);
      const res = await api().call('GET', pollPath(e.environmentId, `?block_ms=${value}`), { key: e.key });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    },
  );

  it('an empty block_ms is treated as absent (the SDK sends null as key=)', async () => {
    const e = await environmentWithKey(t.db);
    const res = await api().call('GET', pollPath(e.environmentId, '?block_ms='), { key: e.key });
    expect(res.status).toBe(200);
  });

  it('block_ms above 999 is clamped: an empty long poll answers null within about a second', async () => {
    const e = await environmentWithKey(t.db);
    const started = performance.now();
    const res = await api().call('GET', pollPath(e.environmentId, '?block_ms=600000'), { key: e.key });
    const elapsed = performance.now() - started;
    expect(await res.json()).toBeNull();
    expect(elapsed).toBeGreaterThanOrEqual(990);
    expect(elapsed).toBeLessThan(1_900);
  });

  it('a long poll wakes as soon as work is enqueued, before its deadline', async () => {
    const e = await environmentWithKey(t.db);
    const a = api();
    const started = performance.now();
    const pending = a.call('GET', pollPath(e.environmentId, '?block_ms=999'), { key: e.key });
    // The enqueue's NOTIFY reaches the hub through LISTEN on Node; here the test is the feed.
    await new Promise((r) => setTimeout(r, 100));
    const { work } = await enqueue(t.db, { ...e, kind: 'tool_exec' });
    a.hub.notify(e.environmentId);
    const res = await pending;
    expect(((await res.json()) as { id: string }).id).toBe(work.id);
    expect(performance.now() - started).toBeLessThan(900);
  });

  it('a client that goes away ends the long poll early', async () => {
    const e = await environmentWithKey(t.db);
    const a = api();
    const controller = new AbortController();
    const started = performance.now();
    const pending = a.app.request(pollPath(e.environmentId, '?block_ms=999'), {
      headers: { authorization: `Bearer ${e.key}` },
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 50);
    const res = await pending;
    expect(res.status).toBe(200);
    expect(performance.now() - started).toBeLessThan(700);
    expect(a.hub.watching).toBe(0);
  });

  it("reclaim_older_than_ms is the polling worker's own window; bad values fall back to 5000 and huge ones clamp", async () => {
    // [query, the window it must mean]: an item handed out half a second inside it stays
    // reserved from this poll, one handed out half a second outside it is offered again.
    for (const [query, window] of [
      ['', 5_000],
      ['?reclaim_older_than_ms=0', 5_000],
      ['?reclaim_older_than_ms=-1', 5_000],
      ['?reclaim_older_than_ms=abc', 5_000],
      ['?reclaim_older_than_ms=1500', 1_500],
      ['?reclaim_older_than_ms=60000', 60_000],
      ['?reclaim_older_than_ms=9223372036854775807', 600_000],
    ] as const) {
      const e = await environmentWithKey(t.db);
      const { work } = await enqueue(t.db, { ...e, kind: 'tool_exec' });
      const first = await api().call('GET', pollPath(e.environmentId), { key: e.key });
      expect(((await first.json()) as { id: string }).id, query).toBe(work.id);
      expect(await leaseWindowMs(t.db, work.id), query).toBeCloseTo(DEFAULT_RECLAIM_MS, 3);

      await ageReservation(t.db, work.id, window - 500);
      const inside = await api().call('GET', pollPath(e.environmentId, query), { key: e.key });
      expect(await inside.json(), `${query}: handed out inside the window`).toBeNull();

      await ageReservation(t.db, work.id, 1_000);
      const outside = await api().call('GET', pollPath(e.environmentId, query), { key: e.key });
      const offered = (await outside.json()) as { id: string } | null;
      expect(offered?.id, `${query}: handed out outside the window`).toMatch(/^work_/);
      expect(offered!.id, query).not.toBe(work.id);
    }
  });

  it('a worker polling with a short window is offered an item another worker reserved with the default one, under a new id', async () => {
    const e = await environmentWithKey(t.db);
    const { work } = await enqueue(t.db, { ...e, kind: 'tool_exec' });
    const first = (await (await api().call('GET', pollPath(e.environmentId), { key: e.key })).json()) as {
      id: string;
    };
    expect(first.id).toBe(work.id);
    await ageReservation(t.db, first.id, 400);
    const again = await api().call('GET', pollPath(e.environmentId, '?reclaim_older_than_ms=100'), {
      key: e.key,
    });
    const second = (await again.json()) as { id: string; state: string };
    expect(second).toMatchObject({ state: 'queued' });
    expect(second.id).not.toBe(first.id);
    const staleAck = await api().call('POST', `/v1/environments/${e.environmentId}/work/${first.id}/ack`, {
      key: e.key,
    });
    expect(staleAck.status).toBe(404);
  });

  it('a lapsed reservation is re-offered under a fresh id; the old id is gone', async () => {
    const e = await environmentWithKey(t.db);
    await enqueue(t.db, { ...e, kind: 'tool_exec' });
    const first = (await (await api().call('GET', pollPath(e.environmentId), { key: e.key })).json()) as {
      id: string;
    };
    expect(await (await api().call('GET', pollPath(e.environmentId), { key: e.key })).json()).toBeNull();
    await lapseLease(t.db, first.id);
    const second = (await (await api().call('GET', pollPath(e.environmentId), { key: e.key })).json()) as {
      id: string;
    };
    expect(second.id).not.toBe(first.id);
    expect(await readWork(t.db, first.id)).toBeNull();
    const ack = await api().call('POST', `/v1/environments/${e.environmentId}/work/${first.id}/ack`, {
      key: e.key,
    });
    expect(ack.status).toBe(404);
  });

  it('records Anthropic-Worker-ID for workers_polling; a poll without it adds nothing', async () => {
    const e = await environmentWithKey(t.db);
    const a = api();
    for (const worker of ['a', 'a', 'b']) {
      await a.call('GET', pollPath(e.environmentId), {
        key: e.key,
        headers: { 'anthropic-worker-id': worker },
      });
    }
    await a.call('GET', pollPath(e.environmentId), { key: e.key });
    const stats = await a.call('GET', `/v1/environments/${e.environmentId}/work/stats`, { key: e.key });
    expect(await stats.json()).toMatchObject({ workers_polling: 2 });
  });

  it('a poll whose worker record fails (its environment deleted under a remembered key) still answers', async () => {
    const environmentId = await createEnvironment(t.db);
    const { key } = await issueEnvironmentKey(t.db, environmentId, 'test key', null);
    const a = api();
    // The app now remembers the key (for 2 s): the next poll is authorized without a lookup.
    expect((await a.call('GET', pollPath(environmentId), { key })).status).toBe(200);
    await t.db.execute(sql`DELETE FROM environments WHERE id = ${environmentId}`);
    // Its worker's row can no longer be written (no environment to reference): the poll is
    // answered all the same, without it.
    const res = await a.call('GET', pollPath(environmentId), {
      key,
      headers: { 'anthropic-worker-id': 'w' },
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('null\n');
  });

  describe('the long-poll cap', () => {
    /** An app with its own gate, so a test can fill a key's slots and watch them drain. */
    function gated(perKey: number) {
      const gate = new PollGate({ perKey, perProcess: 100 });
      const app = createApp(
        { db: t.db, wake: new WakeHub(), log: { warn: () => {}, error: () => {} } },
        { pollGate: gate },
      );
      const get = (env: string, key: string, query: string) =>
        Promise.resolve(app.request(pollPath(env, query), { headers: { authorization: `Bearer ${key}` } }));
      return { gate, get };
    }

    it('over the per-key cap a long poll is refused at once: 429 rate_limit_error, retry-after 1', async () => {
      const { gate, get } = gated(1);
      const e = await environmentWithKey(t.db);
      const parked = get(e.environmentId, e.key, '?block_ms=999');
      await vi.waitFor(() => expect(gate.open(e.keyId)).toBe(1), { timeout: 5_000, interval: 5 });
      const started = performance.now();
      const res = await get(e.environmentId, e.key, '?block_ms=999');
      expect(performance.now() - started).toBeLessThan(500);
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(res.headers.get('request-id')).toMatch(/^req_/);
      const body = (await res.json()) as { type: string; request_id: string; error: Record<string, string> };
      expect(body).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
      expect(body.request_id).toBe(res.headers.get('request-id'));
      expect(body.error.message).toMatch(/at most 1/);
      expect((await parked).status).toBe(200);
    });

    it('polls without block_ms never park, so the cap does not apply to them', async () => {
      const { gate, get } = gated(1);
      const e = await environmentWithKey(t.db);
      const parked = get(e.environmentId, e.key, '?block_ms=999');
      await vi.waitFor(() => expect(gate.open(e.keyId)).toBe(1), { timeout: 5_000, interval: 5 });
      for (const query of ['', '?block_ms=']) {
        const res = await get(e.environmentId, e.key, query);
        expect(res.status, query).toBe(200);
      }
      expect(gate.open(e.keyId)).toBe(1);
      await parked;
    });

    it('a bad block_ms is still a 400 and an unknown key still a 401 when the key is at its cap', async () => {
      const { gate, get } = gated(1);
      const e = await environmentWithKey(t.db);
      const parked = get(e.environmentId, e.key, '?block_ms=999');
      await vi.waitFor(() => expect(gate.open(e.keyId)).toBe(1), { timeout: 5_000, interval: 5 });
      expect((await get(e.environmentId, e.key, '?block_ms=0')).status).toBe(400);
      expect((await get(e.environmentId, 'lh_not_a_key', '?block_ms=999')).status).toBe(401);
      expect(gate.open()).toBe(1);
      await parked;
    });

    it('another key of the same environment has slots of its own', async () => {
      const { gate, get } = gated(1);
      const e = await environmentWithKey(t.db);
      const second = await issueEnvironmentKey(t.db, e.environmentId, 'second key', null);
      const parked = get(e.environmentId, e.key, '?block_ms=999');
      await vi.waitFor(() => expect(gate.open(e.keyId)).toBe(1), { timeout: 5_000, interval: 5 });
      expect((await get(e.environmentId, second.key, '?block_ms=1')).status).toBe(200);
      await parked;
    });
  });
});
