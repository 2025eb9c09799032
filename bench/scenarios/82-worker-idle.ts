/**
 * worker_idle: what an idle BYOC worker costs, and how soon a waiting one hears of work, on the
 * Node server and on the API Worker (the `wrangler deploy` bundle under workerd, its database
 * through the Neon driver, a local wsproxy and a statement-counting proxy). Raw HTTP, not the
 * SDK's WorkPoller, whose own 1–3 s sleep between empty polls would hide what a poll costs.
 * Everything runs on a private PostgreSQL cluster that asks for a cleartext password, as
 * Neon's proxy does, so the Worker's pipelined connection start-up works as in production.
 *
 * - idle: `pollers` loops of back-to-back `GET /work/poll?block_ms=999` (with the SDK's
 *   `Anthropic-Worker-ID`) on an empty environment: statements and new database connections
 *   per minute per poller, and statements per long poll;
 * - wake: a long poll already waiting when an item is enqueued (straight into PostgreSQL, a
 *   random 0–400 ms after the poll's first statements reached the database): enqueue → the
 *   poll's answer, p50/p99;
 * - stream: statements per minute of one open event stream of an idle session (Worker);
 * - calls: each call of a work cycle (poll with work waiting → ack → heartbeat → stop) on the
 *   Worker: its round trips to the database counted at the wsproxy (each websocket upgrade,
 *   and each flight of messages sent after the server last answered), its statements and
 *   connections, and its wall time with no delay and with `delayMs` each way (the difference
 *   over the round trip estimates the same count by the clock: noisy on a shared machine).
 *   `poll_cold` is a poll whose key the isolate's credential cache no longer holds;
 *   `unpipelined_*` the same calls on a Worker without the pipelined start-up. In production
 *   TCP and TLS add their round trips to each upgrade.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { issueEnvironmentKey } from '../../src/auth/credentials.js';
import { connectPg, migratePg, type PgConnection } from '../../src/db/drivers/node-pg.js';
import { enqueue } from '../../src/queue/enqueue.js';
import { stopWork } from '../../src/queue/stop.js';
import { createSession, setupSession } from '../../test/helpers/factories.js';
import { type CountProxy, startCountProxy } from '../../test/helpers/pg-count-proxy.js';
import { startPrivatePostgres } from '../../test/helpers/private-postgres.js';
import { type RunningServer, startServer } from '../../test/helpers/server.js';
import { type RunningWorkers, startWorkers } from '../../test/helpers/workers.js';
import { openEventStream } from '../lib/event-stream.js';
import { type BenchContext, type Metrics, percentile, type Scenario } from '../lib/harness.js';

// An idle stream re-reads every 15 s (RECHECK_MS): its window holds two of those per stream.
// streamSettleMs: an event stream's re-read backoff grows over its first seconds (no LISTEN);
// past that is its idle cost. The smoke run only needs the path to work, not the steady figure.
const FULL = {
  pollers: 4,
  // 12 s: 48 long polls of 999 ms across the pollers, enough for steady per-poll counts.
  idleMs: 12_000,
  streamMs: 30_000,
  streamSettleMs: 8_000,
  wakeSamples: 25,
  cycles: 8,
  cold: 3,
  streams: 4,
  delayMs: 20,
};
const SMOKE = {
  pollers: 1,
  idleMs: 1_500,
  streamMs: 1_500,
  streamSettleMs: 1_000,
  wakeSamples: 5,
  cycles: 3,
  cold: 1,
  streams: 1,
  delayMs: 20,
};
const BLOCK_MS = 999;
/** How far into its wait a sample's enqueue lands, at most (the block is 999 ms). */
const WAKE_SPREAD_MS = 400;
const MIGRATIONS = path.resolve(import.meta.dirname, '../../drizzle');
/** The credential cache's life (src/auth/credential-cache.ts) plus a margin. */
const CREDENTIAL_FORGOTTEN_MS = 2_100;

type Sizes = typeof FULL;

export function scenarios(ctx: BenchContext): Scenario[] {
  const sizes = ctx.smoke ? SMOKE : FULL;
  let rig: Rig | null = null;
  return [
    {
      name: 'worker_idle',
      description:
        `idle BYOC pollers (${sizes.pollers}, back-to-back block_ms=999 raw HTTP) on Node and on the Worker under workerd: ` +
        'statements and new DB connections per minute per poller; Worker: enqueue → blocked poll answered (p50/p99), ' +
        `statements per idle event-stream minute, and poll/ack/heartbeat/stop wall time with 0 and ${sizes.delayMs} ms each way to PostgreSQL`,
      setup: async () => {
        rig = await startRig();
      },
      teardown: async () => {
        await rig?.close();
        rig = null;
      },
      subjects: {
        node: () => idle(rig!.node, sizes),
        workers: async () => ({
          ...(await idle(rig!.workers, sizes)),
          ...(await idleStream(rig!, sizes.streams, sizes.streamSettleMs, sizes.streamMs)),
        }),
        workers_wake: () => wake(rig!.workers, rig!.db, sizes),
        workers_calls: () => calls(rig!, sizes),
      },
      // Statements, connections and round trips are counts: the first round's are the figures
      // (the calls' wall times ride along, n = 1).
      once: ['node', 'workers', 'workers_calls'],
      goals: [
        { subject: 'workers', metric: 'statements_per_long_poll', goal: { op: '<=', value: 3 } },
        { subject: 'workers_wake', metric: 'wake_p50_ms', goal: { op: '<=', value: 200 } },
        { subject: 'workers_wake', metric: 'wake_p99_ms', goal: { op: '<=', value: 500 } },
      ],
    },
  ];
}

/** One server under test: its base URL and the counting proxy in front of its database. */
interface Target {
  baseURL: string;
  counter: CountProxy;
  environmentId: string;
  key: string;
}

interface Rig {
  db: PgConnection;
  node: Target;
  /** The Worker with the Neon driver's pipelined start-up (as against Neon). */
  workers: WorkersTarget;
  /** The same Worker with it off (what a local server with trust authentication needs). */
  unpipelined: WorkersTarget;
  close(): Promise<void>;
}

type WorkersTarget = Target & { running: RunningWorkers; adminKey: string };

/**
 * Everything on a private PostgreSQL cluster that asks TCP clients for a cleartext password,
 * as Neon's proxy does, so the Worker's pipelined start-up works as it does in production.
 */
async function startRig(): Promise<Rig> {
  const cleanups: Array<() => Promise<unknown>> = [];
  const close = async () => {
    for (const c of cleanups.reverse()) await c().catch(() => {});
  };
  try {
    const cluster = await startPrivatePostgres({ password: randomUUID() });
    cleanups.push(() => cluster.destroy());
    const databaseUrl = await cluster.createDatabase('leasehold_worker_idle');
    const db = connectPg(databaseUrl, { max: 2 });
    cleanups.push(() => db.close());
    await migratePg(db.db, MIGRATIONS);
    const counted = async () => {
      const counter = await startCountProxy({ host: '127.0.0.1', port: cluster.port });
      cleanups.push(() => counter.close());
      const url = new URL(databaseUrl);
      url.host = counter.address;
      return { counter, url: url.toString() };
    };
    const environment = async () => {
      const { environmentId } = await setupSession(db.db, 'self_hosted');
      return { environmentId, key: (await issueEnvironmentKey(db.db, environmentId, 'bench', null)).key };
    };
    // One key for both Workers: each makes its configured key the live one, retiring any other.
    const adminKey = `lh_bench_admin_${randomUUID().replaceAll('-', '')}`;
    const worker = async (pipelineConnect: 'on' | 'off'): Promise<WorkersTarget> => {
      const counter = await counted();
      const running = await startWorkers({
        databaseUrl: counter.url,
        adminKey,
        brain: false,
        settings: { LEASEHOLD_NEON_PIPELINE_CONNECT: pipelineConnect },
      });
      cleanups.push(() => running.close());
      return {
        baseURL: running.baseURL,
        counter: counter.counter,
        running,
        adminKey,
        ...(await environment()),
      };
    };

    const nodeDb = await counted();
    const server: RunningServer = await startServer({
      databaseUrl: nodeDb.url,
      env: { LEASEHOLD_HOUSEKEEPING_EVERY_MS: '0' },
    });
    cleanups.push(() => server.stop());
    return {
      db,
      node: { baseURL: server.baseURL, counter: nodeDb.counter, ...(await environment()) },
      workers: await worker('on'),
      unpipelined: await worker('off'),
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

const headers = (t: Target, workerId?: string) => ({
  authorization: `Bearer ${t.key}`,
  ...(workerId ? { 'anthropic-worker-id': workerId } : {}),
});

async function longPoll(t: Target, workerId: string, signal?: AbortSignal): Promise<{ id: string } | null> {
  const res = await fetch(`${t.baseURL}/v1/environments/${t.environmentId}/work/poll?block_ms=${BLOCK_MS}`, {
    headers: headers(t, workerId),
    signal,
  });
  if (!res.ok) throw new Error(`poll: ${res.status} ${await res.text()}`);
  return (await res.json()) as { id: string } | null;
}

/** Idle pollers polling back to back for `idleMs`, after a second of warm-up. */
async function idle(t: Target, sizes: Sizes): Promise<Metrics> {
  let counting = false;
  let stop = false;
  let polls = 0;
  const loops = Array.from({ length: sizes.pollers }, async () => {
    const workerId = randomUUID();
    while (!stop) {
      const work = await longPoll(t, workerId);
      if (work) throw new Error(`worker_idle: the idle environment handed out ${work.id}`);
      if (counting && !stop) polls++;
    }
  });
  await new Promise((r) => setTimeout(r, 1_000));
  const statements = t.counter.statements();
  const connections = t.counter.connections();
  counting = true;
  const started = performance.now();
  await new Promise((r) => setTimeout(r, sizes.idleMs));
  const elapsed = performance.now() - started;
  const perMinute = (n: number) => n / (elapsed / 60_000) / sizes.pollers;
  const sent = t.counter.statements() - statements;
  const opened = t.counter.connections() - connections;
  stop = true;
  await Promise.all(loops);
  return {
    statements_per_min: perMinute(sent),
    connections_per_min: perMinute(opened),
    long_polls_per_min: perMinute(polls),
    statements_per_long_poll: sent / Math.max(1, polls),
  };
}

/** Enqueue → the answer of a long poll that was already waiting. */
async function wake(t: Target, db: PgConnection, sizes: Sizes): Promise<Metrics> {
  const ms: number[] = [];
  let missed = 0;
  const workerId = randomUUID();
  while (ms.length < sizes.wakeSamples && missed <= sizes.wakeSamples) {
    const sessionId = await createSession(db.db, t.environmentId);
    const from = t.counter.statements();
    let answeredAt = 0;
    const answer = longPoll(t, workerId).then((w) => {
      answeredAt = performance.now();
      return w;
    });
    // Waiting once it has sent its first statements (a LISTEN and a read, or two reads), then
    // a random while longer: a request's start-up on a busy machine is not a waiting poll.
    while (t.counter.statements() - from < 2 && answeredAt === 0) await new Promise((r) => setTimeout(r, 1));
    await new Promise((r) => setTimeout(r, Math.random() * WAKE_SPREAD_MS));
    const sent = performance.now();
    const { work } = await enqueue(db.db, { environmentId: t.environmentId, sessionId, kind: 'tool_exec' });
    const got = await answer;
    // Answered before the enqueue (null at its deadline): not a waiting poll; sample again.
    if (got?.id === work.id && answeredAt >= sent) ms.push(answeredAt - sent);
    // Answered null after the enqueue: the waiting poll never heard of it.
    else if (!got && answeredAt >= sent) missed++;
    await stopWork(db.db, t.environmentId, got?.id ?? work.id, true).catch(() => {});
    if (got && got.id !== work.id)
      throw new Error(`worker_idle: a wake-up poll got ${got.id}, not ${work.id}`);
  }
  return { wake_p50_ms: percentile(ms, 50), wake_p99_ms: percentile(ms, 99), wake_missed: missed };
}

/** Statements and new connections per minute of one open event stream of an idle session, on the Worker. */
async function idleStream(rig: Rig, streams: number, settleMs: number, ms: number): Promise<Metrics> {
  const t = rig.workers;
  const admin = { authorization: `Bearer ${t.adminKey}`, 'content-type': 'application/json' };
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${t.baseURL}${path}`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { id: string }).id;
  };
  const agent = await post('/v1/agents', { name: 'bench', model: 'bench-model' });
  const opened = [];
  try {
    for (let i = 0; i < streams; i++) {
      const id = await post('/v1/sessions', { agent, environment_id: t.environmentId });
      opened.push(await openEventStream(`${t.baseURL}/v1/sessions/${id}/events/stream`, headers(t)));
    }
    await new Promise((r) => setTimeout(r, settleMs));
    const statements = t.counter.statements();
    const connections = t.counter.connections();
    const started = performance.now();
    await new Promise((r) => setTimeout(r, ms));
    const perMinute = (n: number) => n / ((performance.now() - started) / 60_000) / streams;
    return {
      stream_statements_per_min: perMinute(t.counter.statements() - statements),
      stream_connections_per_min: perMinute(t.counter.connections() - connections),
    };
  } finally {
    for (const s of opened) s.close();
  }
}

const CALLS = ['poll', 'ack', 'heartbeat', 'stop'] as const;
type Call = (typeof CALLS)[number] | 'poll_cold';
interface Figures {
  ms: number;
  statements: number;
  connections: number;
  /** Counted at the wsproxy: upgrades and flights the Worker waited on. */
  round_trips: number;
}

/** One work cycle on the Worker `t`: each call's wall time and the statements it sent. */
async function cycle(rig: Rig, t: WorkersTarget, cold: boolean): Promise<Record<Call, Figures>> {
  const sessionId = await createSession(rig.db.db, t.environmentId);
  await enqueue(rig.db.db, { environmentId: t.environmentId, sessionId, kind: 'tool_exec' });
  if (cold) await new Promise((r) => setTimeout(r, CREDENTIAL_FORGOTTEN_MS));
  const base = `${t.baseURL}/v1/environments/${t.environmentId}/work`;
  const out = {} as Record<Call, Figures>;
  const proxy = t.running.wsProxy;
  const timed = async (name: Call, path: string, method: string): Promise<unknown> => {
    const statements = t.counter.statements();
    const connections = t.counter.connections();
    const roundTrips = proxy.roundTrips();
    const started = performance.now();
    const res = await fetch(`${base}${path}`, { method, headers: headers(t, 'bench-cycle') });
    const body = (await res.json()) as unknown;
    const ms = performance.now() - started;
    if (!res.ok) throw new Error(`${name}: ${res.status} ${JSON.stringify(body)}`);
    // A statement reaches the proxy before its answer leaves it: counted by now.
    out[name] = {
      ms,
      statements: t.counter.statements() - statements,
      connections: t.counter.connections() - connections,
      round_trips: proxy.roundTrips() - roundTrips,
    };
    return body;
  };
  const work = (await timed(cold ? 'poll_cold' : 'poll', `/poll?block_ms=${BLOCK_MS}`, 'GET')) as {
    id: string;
  } | null;
  if (!work) throw new Error('worker_idle: a poll with work waiting answered null');
  await timed('ack', `/${work.id}/ack`, 'POST');
  await timed('heartbeat', `/${work.id}/heartbeat?expected_last_heartbeat=NO_HEARTBEAT`, 'POST');
  await timed('stop', `/${work.id}/stop`, 'POST');
  await stopWork(rig.db.db, t.environmentId, work.id, true).catch(() => {});
  return out;
}

/**
 * Median wall time, round trips, statements and connections per call, with and without the
 * injected delay; `unpipelined_*`: the round trips of the same calls without the pipelined
 * start-up.
 */
async function calls(rig: Rig, sizes: Sizes): Promise<Metrics> {
  const measure = async (t: WorkersTarget, delayMs: number, cycles = sizes.cycles, cold = sizes.cold) => {
    const proxy = t.running.wsProxy;
    proxy.delayMs = delayMs;
    const runs: Array<Partial<Record<Call, Figures>>> = [];
    try {
      await cycle(rig, t, false); // warm: the isolate, its credential cache
      for (let i = 0; i < cycles; i++) runs.push(await cycle(rig, t, false));
      for (let i = 0; i < cold; i++) runs.push(await cycle(rig, t, true));
    } finally {
      proxy.delayMs = 0;
    }
    const median = (call: Call, k: keyof Figures) =>
      percentile(
        runs.flatMap((r) => (r[call] ? [r[call][k]] : [])),
        50,
      );
    return median;
  };
  const plain = await measure(rig.workers, 0);
  const delayed = await measure(rig.workers, sizes.delayMs);
  // Counted, not timed: a few cycles say it.
  const unpipelined = await measure(rig.unpipelined, 0, 3, 1);
  const rtt = 2 * sizes.delayMs;
  const metrics: Metrics = {};
  for (const call of [...CALLS, 'poll_cold'] as const) {
    metrics[`${call}_ms`] = plain(call, 'ms');
    metrics[`${call}_delayed_ms`] = delayed(call, 'ms');
    // The clock's estimate (noisy on a shared machine) beside the proxy's count.
    metrics[`${call}_round_trips_by_time`] = (delayed(call, 'ms') - plain(call, 'ms')) / rtt;
    metrics[`${call}_round_trips`] = plain(call, 'round_trips');
    metrics[`unpipelined_${call}_round_trips`] = unpipelined(call, 'round_trips');
    metrics[`${call}_statements`] = plain(call, 'statements');
    metrics[`${call}_connections`] = plain(call, 'connections');
  }
  return metrics;
}
