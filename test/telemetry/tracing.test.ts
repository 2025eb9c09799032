import { type SpanContext, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runOnce } from '../../src/housekeeping/index.js';
import {
  ack,
  assertLease,
  cancelSession,
  claim,
  complete,
  enqueue,
  extend,
  getWork,
  heartbeat,
  listWork,
  NO_HEARTBEAT,
  poll,
  recordPoll,
  requeue,
  stats,
  stop,
  updateMetadata,
} from '../../src/queue/index.js';
import { apiKey, environmentWithKey, testApi } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import { setupSession } from '../helpers/factories.js';
import { registerContextManager } from '../helpers/otel-context.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const POLL_ROUTE = '/v1/environments/:environmentId/work/poll';
const WORK_ITEM_ROUTE = '/v1/environments/:environmentId/work/:workId';
const INCOMING = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' };

beforeAll(() => {
  registerContextManager();
  trace.setGlobalTracerProvider(provider);
});
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
});
beforeEach(() => exporter.reset());

const spans = () => exporter.getFinishedSpans();
const named = (name: string) => spans().filter((s) => s.name === name);
function only(name: string): ReadableSpan {
  const found = named(name);
  expect(
    found.map((s) => s.name),
    `exactly one ${name}`,
  ).toEqual([name]);
  return found[0]!;
}
const traceparent = (c: SpanContext) => `00-${c.traceId}-${c.spanId}-01`;

/** Runs `fn` inside a fresh span, as a platform turn would, and returns that span's context. */
async function underTurn(fn: () => Promise<unknown>): Promise<SpanContext> {
  return trace.getTracer('test').startActiveSpan('turn', async (span) => {
    await fn();
    span.end();
    return span.spanContext();
  });
}

describe('tracing', () => {
  const t = useTestDb('pg');
  const pollPath = (env: string) => `/v1/environments/${env}/work/poll`;

  it('a poll answers with the enqueuing span as traceparent, and its hand-out span is that span’s child', async () => {
    const e = await environmentWithKey(t.db);
    const turn = await underTurn(() => enqueue(t.db, { ...e, kind: 'tool_exec' }));
    exporter.reset();

    const res = await testApi(t.db).call('GET', pollPath(e.environmentId), { key: e.key });
    const work = (await res.json()) as { id: string };

    expect(res.headers.get('traceparent')).toBe(traceparent(turn));
    const handOut = only('queue.hand_out');
    expect(handOut.spanContext().traceId).toBe(turn.traceId);
    expect(handOut.parentSpanContext?.spanId).toBe(turn.spanId);
    expect(handOut.attributes).toMatchObject({ 'work.id': work.id, 'environment.id': e.environmentId });
    // The poll lives in the worker request's own trace; links join the two traces both ways.
    const pollSpan = only('queue.poll');
    const server = only(`GET ${POLL_ROUTE}`);
    expect(pollSpan.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
    expect(pollSpan.spanContext().traceId).not.toBe(turn.traceId);
    expect(pollSpan.links.map((l) => l.context.spanId)).toEqual([turn.spanId]);
    expect(handOut.links.map((l) => l.context.spanId)).toEqual([pollSpan.spanContext().spanId]);
  });

  it('an item enqueued with no span is handed out with no hand-out span', async () => {
    const e = await environmentWithKey(t.db);
    await enqueue(t.db, { ...e, kind: 'tool_exec' });
    const res = await testApi(t.db).call('GET', pollPath(e.environmentId), { key: e.key });
    expect(res.headers.get('traceparent')).toBeNull();
    expect(only('queue.poll').links).toEqual([]);
    expect(named('queue.hand_out')).toEqual([]);
  });

  it('a claim gives the item the enqueuing span’s context and records its hand-out as that span’s child', async () => {
    const s = await setupSession(t.db, 'cloud');
    const turn = await underTurn(() => enqueue(t.db, { ...s, kind: 'web_exec' }));
    const item = await claim(t.db, 'web_exec', 60_000);
    expect(item!.traceContext).toEqual({ traceparent: traceparent(turn) });
    const handOut = only('queue.hand_out');
    expect(handOut.parentSpanContext?.spanId).toBe(turn.spanId);
    expect(handOut.links.map((l) => l.context.spanId)).toEqual([only('queue.claim').spanContext().spanId]);
  });

  it('every request gets a SERVER span named after its matched route, carrying the status code', async () => {
    const e = await environmentWithKey(t.db);
    const admin = await apiKey(t.db);
    const api = testApi(t.db);
    const calls = [
      [pollPath(e.environmentId), e.key, POLL_ROUTE, 200],
      [pollPath(e.environmentId), null, POLL_ROUTE, 401],
      [`/v1/environments/${e.environmentId}/work/work_nope`, admin, WORK_ITEM_ROUTE, 404],
      ['/v1/nothing/here', null, null, 404],
    ] as const;
    for (const [path, key, route, status] of calls) {
      exporter.reset();
      const res = await api.call('GET', path, { key });
      expect(res.status, path).toBe(status);
      const server = spans().filter((s) => s.kind === SpanKind.SERVER);
      // No route matched: the raw path, as docs/queue.md ("Telemetry") names the span.
      expect(
        server.map((s) => s.name),
        path,
      ).toEqual([`GET ${route ?? path}`]);
      expect(server[0]!.attributes, path).toMatchObject({
        'http.request.method': 'GET',
        'http.response.status_code': status,
        'url.path': path,
      });
      expect(server[0]!.attributes['http.route'], path).toBe(route ?? undefined);
      expect(server[0]!.status.code, path).toBe(SpanStatusCode.UNSET);
      expect(server[0]!.parentSpanContext, path).toBeUndefined();
    }
  });

  it('an incoming traceparent (any header case) becomes the server span’s remote parent, tracestate included', async () => {
    const e = await environmentWithKey(t.db);
    const res = await testApi(t.db).call('GET', pollPath(e.environmentId), {
      key: e.key,
      headers: { TraceParent: `00-${INCOMING.traceId}-${INCOMING.spanId}-01`, TRACESTATE: 'vendor=abc' },
    });
    expect(res.status).toBe(200);
    const server = only(`GET ${POLL_ROUTE}`);
    expect(server.parentSpanContext).toMatchObject({ ...INCOMING, isRemote: true });
    expect(server.spanContext().traceId).toBe(INCOMING.traceId);
    expect(server.spanContext().traceState?.serialize()).toBe('vendor=abc');
    expect(only('queue.poll').parentSpanContext?.spanId).toBe(server.spanContext().spanId);
  });

  it('an invalid traceparent is ignored: the server span starts a new trace', async () => {
    const e = await environmentWithKey(t.db);
    await testApi(t.db).call('GET', pollPath(e.environmentId), {
      key: e.key,
      headers: { traceparent: `00-${'0'.repeat(32)}-${INCOMING.spanId}-01` },
    });
    expect(only(`GET ${POLL_ROUTE}`).parentSpanContext).toBeUndefined();
  });

  it('a 500 marks the server span as an error, naming the error class but never its message', async () => {
    const e = await environmentWithKey(t.db);
    await t.db.execute(sql`ALTER TABLE work_items RENAME TO work_items_away`);
    let res: Response;
    try {
      res = await testApi(t.db).call('GET', pollPath(e.environmentId), { key: e.key });
    } finally {
      await t.db.execute(sql`ALTER TABLE work_items_away RENAME TO work_items`);
    }
    expect(res.status).toBe(500);
    const server = only(`GET ${POLL_ROUTE}`);
    expect(server.status).toEqual({ code: SpanStatusCode.ERROR });
    expect(server.attributes['http.response.status_code']).toBe(500);
    expect(server.attributes['error.type']).toBe('DrizzleQueryError');
    const failed = only('queue.poll');
    expect(failed.status.code).toBe(SpanStatusCode.ERROR);
    expect(failed.attributes['error.type']).toBe(server.attributes['error.type']);
    for (const span of [server, failed]) {
      expect(span.events).toEqual([]);
      expect(JSON.stringify(span.attributes)).not.toMatch(/work_items|select|update/i);
    }
  });

  it('every queue operation runs in a span queue.<op> carrying the ids it knows', async () => {
    const wire = await setupSession(t.db);
    const env = wire.environmentId;
    const { work } = await enqueue(t.db, { ...wire, kind: 'tool_exec' });
    await recordPoll(t.db, env, 'worker-1');
    await poll(t.db, env, 60_000);
    await ack(t.db, env, work.id);
    await heartbeat(t.db, env, work.id, NO_HEARTBEAT, 30);
    await updateMetadata(t.db, env, work.id, { k: 'v' }, []);
    await getWork(t.db, env, work.id);
    await listWork(t.db, env, { fetch: 10 });
    await stats(t.db, env);
    await stop(t.db, env, work.id, true);
    const platform = await setupSession(t.db, 'cloud');
    await enqueue(t.db, { ...platform, kind: 'model_turn' });
    const item = (await claim(t.db, 'model_turn', 60_000))!;
    await extend(t.db, item, 60_000);
    await assertLease(t.db, item);
    await requeue(t.db, item);
    await complete(t.db, (await claim(t.db, 'model_turn', 60_000))!);
    await cancelSession(t.db, platform.sessionId);
    await runOnce({ db: t.db });

    const ops = [
      'enqueue',
      'record_poll',
      'poll',
      'ack',
      'heartbeat',
      'update_metadata',
      'get_work',
      'list_work',
      'stats',
      'stop',
      'claim',
      'extend',
      'assert_lease',
      'requeue',
      'complete',
      'cancel_session',
      'finalize_abandoned',
      'reap_polls',
      'sample_queues',
      'prune_samples',
      'delete_stopped_work',
    ];
    const names = new Set(spans().map((s) => s.name));
    expect(ops.filter((op) => !names.has(`queue.${op}`))).toEqual([]);
    for (const op of ['poll', 'ack', 'heartbeat', 'update_metadata', 'get_work', 'stop']) {
      expect(only(`queue.${op}`).attributes, op).toMatchObject({ 'environment.id': env, 'work.id': work.id });
    }
    for (const op of ['extend', 'assert_lease', 'requeue']) {
      expect(only(`queue.${op}`).attributes, op).toMatchObject({ 'work.id': item.id });
    }
    expect(only('queue.cancel_session').attributes).toMatchObject({ 'session.id': platform.sessionId });
    const housekeeping = only('queue.housekeeping');
    for (const op of [
      'finalize_abandoned',
      'reap_polls',
      'sample_queues',
      'prune_samples',
      'delete_stopped_work',
    ]) {
      expect(only(`queue.${op}`).parentSpanContext?.spanId, op).toBe(housekeeping.spanContext().spanId);
    }
  });

  it('a queue operation that fails marks its span with the error class', async () => {
    const { environmentId } = await setupSession(t.db);
    await expect(getWork(t.db, environmentId, 'work_missing')).rejects.toThrow();
    const span = only('queue.get_work');
    expect(span.status.code).toBe(SpanStatusCode.ERROR);
    expect(span.attributes['error.type']).toBe('WorkNotFoundError');
  });
});
