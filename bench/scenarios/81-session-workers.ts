/**
 * session_loop_workers: session_loop (80-session.ts) on the Workers build. Both Workers as
 * deployed — the API Worker and the brain Worker, bundled by `wrangler deploy --dry-run` —
 * run under workerd (Miniflare, test/helpers/workers.ts) with the API Worker's service binding
 * `BRAIN`; PostgreSQL through the Neon driver and a local wsproxy, NATS over its websocket
 * listener. A sample sends one `user.message` to a fresh session over loopback HTTP and times,
 * from just before the POST:
 *
 * - model_call: until the brain Worker's Messages request reaches the model (a local fake that
 *   answers `end_turn` at once): the request's commit, the trigger through the binding after
 *   the response, a Neon Pool and a NATS connection opened by the brain invocation, the claim,
 *   the turn's reads and the journal's claim record;
 * - sse_frame: until the session's open event stream delivers the message's own frame (no
 *   LISTEN on Workers: the stream re-reads the log's head on a 200 ms – 2 s backoff).
 *
 * What an idle open stream costs the database on the Worker is worker_idle's to measure
 * (`workers.stream_statements_per_min`): the same stream, the same Worker.
 *
 * Local figures: no network between the Workers, the database and NATS, which in production
 * add their round trips to both.
 */
import { randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { ensureJournalStream } from '../../src/journal/stream.js';
import { startNatsServer } from '../../test/helpers/nats-server.js';
import { type RunningWorkers, startWorkers } from '../../test/helpers/workers.js';
import { openEventStream, sampleLoop } from '../lib/event-stream.js';
import type { BenchContext, Scenario } from '../lib/harness.js';
import { fakeModel } from './80-session.js';

const FULL = { samples: 30, warmup: 5 };
const SMOKE = { samples: 5, warmup: 1 };

export function scenarios(ctx: BenchContext): Scenario[] {
  const sizes = ctx.smoke ? SMOKE : FULL;
  let loop: WorkersLoop | null = null;
  return [
    {
      name: 'session_loop_workers',
      description:
        `user.message → the brain Worker's model request, and → its SSE frame, ${sizes.samples} sequential samples per ` +
        'round on both Workers under workerd (brain triggered through the service binding, fake model answering at once)',
      setup: async () => {
        loop = await startWorkersLoop(ctx.databaseUrl);
      },
      teardown: async () => {
        await loop?.close();
        loop = null;
      },
      subjects: {
        leasehold_workers: () => sampleLoop(sizes, () => loop!.sample()),
      },
    },
  ];
}

interface WorkersLoop {
  sample(): Promise<{ model: number; frame: number }>;
  close(): Promise<void>;
}

/** How long one sample may take before the run fails, naming what did not arrive. */
const SAMPLE_TIMEOUT_MS = 15_000;

async function startWorkersLoop(databaseUrl: string): Promise<WorkersLoop> {
  let modelHit: (() => void) | null = null;
  const model = await fakeModel(() => modelHit?.());
  const nats = await startNatsServer();
  await ensureJournalStream(await jetstreamManager(await nats.connect()));
  const adminKey = `lh_bench_admin_${randomBytes(24).toString('hex')}`;
  let workers: RunningWorkers;
  try {
    workers = await startWorkers({
      databaseUrl,
      natsUrl: nats.wsUrl,
      adminKey,
      modelBaseUrl: model.url,
      modelApiKey: 'bench',
    });
  } catch (err) {
    await nats.stop();
    await model.close();
    throw err;
  }
  const admin = { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' };
  const post = async <T>(path: string, body: unknown): Promise<T> => {
    const res = await fetch(`${workers.baseURL}${path}`, {
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

  const openStream = (sessionId: string) =>
    openEventStream(`${workers.baseURL}/v1/sessions/${sessionId}/events/stream`, admin);

  return {
    async sample() {
      const session = await post<{ id: string }>('/v1/sessions', { agent: agent.id, environment_id: env.id });
      const stream = await openStream(session.id);
      const frame = stream.until('user.message');
      const idle = stream.until('session.status_idle');
      const modelAt = new Promise<number>((resolve) => {
        modelHit = () => resolve(performance.now());
      });
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new Error(
                `session_loop_workers: no model call, frame or idle within ${SAMPLE_TIMEOUT_MS} ms; ` +
                  `workerd's output:\n${workers.output().slice(-4_000)}`,
              ),
            ),
          SAMPLE_TIMEOUT_MS,
        );
      });
      try {
        const sent = performance.now();
        await post(`/v1/sessions/${session.id}/events`, {
          events: [{ type: 'user.message', content: [{ type: 'text', text: 'hello' }] }],
        });
        const [m, f] = await Promise.race([Promise.all([modelAt, frame]), timeout]);
        await Promise.race([idle, timeout]);
        return { model: m - sent, frame: f - sent };
      } finally {
        clearTimeout(timer);
        // Deleting the session ends its stream on the Worker's side at its next read, which
        // closes its Pool; a client that only goes away is noticed at the stream's next write
        // (its 15 s ping), and a hundred idle streams would hold a hundred connections.
        await fetch(`${workers.baseURL}/v1/sessions/${session.id}`, { method: 'DELETE', headers: admin });
        stream.close();
      }
    },
    async close() {
      await workers.close();
      await nats.stop();
      await model.close();
    },
  };
}
