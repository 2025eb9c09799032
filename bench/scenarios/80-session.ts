/**
 * session_loop: how soon the loop moves, on the real Node server with its brain in process
 * (LISTEN/NOTIFY wake-ups) and a private nats-server for the journal. A sample sends one
 * `user.message` to a fresh session over loopback HTTP and times, from just before the POST:
 *
 * - model_call: until the brain's Messages request reaches the model (a local fake that
 *   answers `end_turn` at once) — the user's wait before the model starts;
 * - sse_frame: until the session's open event stream delivers the message's own frame.
 *
 * The anchor is the floor of any NOTIFY-driven wake-up: a bare NOTIFY heard by a LISTENing
 * connection. `idle` counts the statements the server sends PostgreSQL per minute (through a
 * counting proxy, housekeeping off): with its brain idle, and per open event stream of an
 * idle session on top of that.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startNatsServer } from '../../test/helpers/nats-server.js';
import { startCountProxy } from '../../test/helpers/pg-count-proxy.js';
import { type RunningServer, startServer } from '../../test/helpers/server.js';
import { openNotifyProbe } from '../anchors/pickup-listen.js';
import { isEventStreamStatement, openEventStream, sampleLoop } from '../lib/event-stream.js';
import { type BenchContext, type Metrics, percentile, type Scenario } from '../lib/harness.js';

// An idle window of 30 s holds exactly one idle claim per brain slot (IDLE_WAIT_MS); the open
// streams idle in the same window, their statements told apart by their text.
const FULL = { samples: 120, warmup: 10, idleMs: 30_000, streams: 10 };
const SMOKE = { samples: 5, warmup: 1, idleMs: 2_000, streams: 2 };

export function scenarios(ctx: BenchContext): Scenario[] {
  const sizes = ctx.smoke ? SMOKE : FULL;
  let loop: SessionLoop | null = null;
  return [
    {
      name: 'session_loop',
      description:
        `user.message → the brain's model request, and → its SSE frame, ${sizes.samples} sequential samples per round on ` +
        'the real Node server (brain in process, fake model answering at once); anchor: a bare NOTIFY; ' +
        `idle: statements per minute with the brain idle, and per open stream (${sizes.streams}) of an idle session`,
      setup: async () => {
        loop = await startSessionLoop(ctx.databaseUrl);
      },
      teardown: async () => {
        await loop?.close();
        loop = null;
      },
      subjects: {
        leasehold: () => sampleLoop(sizes, () => loop!.sample()),
        idle: async () => loop!.idleStatements(sizes.streams, sizes.idleMs),
        listen_notify: async () => {
          const probe = await openNotifyProbe(ctx.databaseUrl);
          try {
            const ms: number[] = [];
            for (let i = 0; i < sizes.samples; i++) ms.push(await probe.sample());
            return { p50_ms: percentile(ms, 50), p99_ms: percentile(ms, 99) } as Metrics;
          } finally {
            await probe.close();
          }
        },
      },
      // Statements per idle minute are counts: the first round's are the figures.
      once: ['idle'],
      ratios: [
        {
          name: 'session_model_call_p50_vs_listen_notify',
          numerator: 'leasehold',
          denominator: 'listen_notify',
          metric: 'model_call_p50_ms',
        },
      ],
      goals: [{ subject: 'leasehold', metric: 'model_call_p50_ms', goal: { op: '<=', value: 50 } }],
    },
  ];
}

interface SessionLoop {
  sample(): Promise<{ model: number; frame: number }>;
  idleStatements(streams: number, ms: number): Promise<Metrics>;
  close(): Promise<void>;
}

/** A fake Messages API: notes when each request arrives and answers `end_turn` at once. */
export async function fakeModel(onRequest: () => void): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    onRequest();
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'msg_bench',
          type: 'message',
          role: 'assistant',
          model: 'bench',
          content: [{ type: 'text', text: 'ok' }],
          stop_reason: 'end_turn',
          usage: { input_tokens: 1, output_tokens: 1 },
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

async function startSessionLoop(databaseUrl: string): Promise<SessionLoop> {
  let modelHit: (() => void) | null = null;
  const model = await fakeModel(() => modelHit?.());
  const nats = await startNatsServer();
  const target = new URL(databaseUrl);
  const proxy = await startCountProxy({ host: target.hostname, port: Number(target.port || 5432) });
  const proxied = new URL(databaseUrl);
  proxied.host = proxy.address;
  const server: RunningServer = await startServer({
    databaseUrl: proxied.toString(),
    env: {
      NATS_URL: nats.wsUrl,
      LEASEHOLD_MODEL: 'anthropic',
      LEASEHOLD_MODEL_API_KEY: 'bench',
      LEASEHOLD_MODEL_BASE_URL: model.url,
      LEASEHOLD_HOUSEKEEPING_EVERY_MS: '0',
    },
  });
  const admin = { authorization: `Bearer ${server.adminKey}`, 'content-type': 'application/json' };
  const post = async <T>(path: string, body: unknown): Promise<T> => {
    const res = await fetch(`${server.baseURL}${path}`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  };
  const agent = await post<{ id: string }>('/v1/agents', { name: 'bench', model: 'bench-model' });
  const env = await post<{ id: string }>('/v1/environments', {
    name: 'bench',
    config: { type: 'self_hosted' },
  });
  const newSession = () => post<{ id: string }>('/v1/sessions', { agent: agent.id, environment_id: env.id });

  const openStream = (sessionId: string) =>
    openEventStream(`${server.baseURL}/v1/sessions/${sessionId}/events/stream`, admin);

  return {
    async sample() {
      const session = await newSession();
      const stream = await openStream(session.id);
      const frame = stream.until('user.message');
      const idle = stream.until('session.status_idle');
      const modelAt = new Promise<number>((resolve) => {
        modelHit = () => resolve(performance.now());
      });
      const sent = performance.now();
      await post(`/v1/sessions/${session.id}/events`, {
        events: [{ type: 'user.message', content: [{ type: 'text', text: 'hello' }] }],
      });
      const [m, f] = await Promise.all([modelAt, frame]);
      await idle;
      stream.close();
      return { model: m - sent, frame: f - sent };
    },
    async idleStatements(streams, ms) {
      const opened = [];
      for (let i = 0; i < streams; i++) opened.push(await openStream((await newSession()).id));
      // Each stream reads its session's head once as it starts: not idle cost.
      await new Promise((r) => setTimeout(r, 500));
      const streamStatements = () => proxy.statementsWhere(isEventStreamStatement);
      const brainStatements = () => proxy.statements() - streamStatements();
      try {
        const brain0 = brainStatements();
        const stream0 = streamStatements();
        await new Promise((r) => setTimeout(r, ms));
        const perMinute = (n: number) => n / (ms / 60_000);
        return {
          brain_statements_per_min: perMinute(brainStatements() - brain0),
          stream_statements_per_min: perMinute(streamStatements() - stream0) / streams,
        };
      } finally {
        for (const s of opened) s.close();
      }
    },
    async close() {
      await server.stop();
      await nats.stop();
      await model.close();
      await proxy.close();
    },
  };
}
