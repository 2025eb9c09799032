/**
 * Journal appends: the fenced write every model response, tool intent, tool result and entry
 * goes through (docs/journal.md, "The fenced append"), against the same fenced publish done by hand.
 *
 * - `leasehold`: `Journal.open` claims a fresh step (not timed), then `append('entry', …)`
 *   writes one small JSON record per call, each awaited; `commit` ends the claim (not timed).
 * - `raw` (bench/anchors/journal-raw.ts): a JetStream publish of the same record — same subject
 *   layout, the same seven headers, Nats-Msg-Id and expected-last-subject-sequence — awaiting
 *   each PubAck.
 *
 * Both subjects have their own websocket connection to one private nats-server per scenario,
 * and write into the AGENT_JOURNAL stream as `ensureJournalStream` provisions it. A run is a
 * fixed number of appends; every run writes to fresh step subjects.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { type JetStreamClient, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { WebSocket } from 'ws';
import { connectJournal } from '../../src/journal/connect.js';
import { Journal } from '../../src/journal/journal.js';
import { ensureJournalStream } from '../../src/journal/stream.js';
import { JOURNAL_STREAM, type Json, journalSubject, type Task } from '../../src/journal/types.js';
import { type NatsServer, startNatsServer } from '../../test/helpers/nats-server.js';
import { RawFencedAppender, type RawTask } from '../anchors/journal-raw.js';
import { type BenchContext, type Metrics, percentile, type Scenario } from '../lib/harness.js';

const STEP = 'agent';
const CONCURRENT_STEPS = 8;

/** A small progress note (~150 bytes of JSON), what a tool function appends as an `entry`. */
function record(n: number): Json {
  return {
    n,
    kind: 'progress',
    message: 'fetched a page of the orders table',
    rows: 50,
    cursor: 'b3JkZXJzOjEyMzQ1Njc4',
    tokens: { input: 1532, output: 211 },
  };
}

let runs = 0;
/** A run id of the same length for both subjects (so msg ids and headers are the same size). */
function runId(subject: 'lh' | 'rw'): string {
  runs += 1;
  return `${subject}${String(runs).padStart(6, '0')}`;
}

function taskFor(run: string): Task & RawTask {
  return {
    runId: run,
    stepId: STEP,
    iteration: 0,
    attempt: 1,
    dispatchNonce: 'n0000001',
    delivered: 1,
    streamSeq: 10,
  };
}

interface Timed {
  /** The step subjects written. */
  subjects: string[];
  appends: number;
  seconds: number;
  latencies: Float64Array;
  /** CPU of this process (the writers' client side) over the timed appends, in µs. */
  cpuUs: number;
}

function metricsOf(t: Timed): Metrics {
  const lat = Array.from(t.latencies);
  return {
    appends_per_s: t.appends / t.seconds,
    p50_ms: percentile(lat, 50),
    p99_ms: percentile(lat, 99),
    client_cpu_us: t.cpuUs / t.appends,
  };
}

/**
 * A full collection before each timed run, so neither subject pays for garbage the other (or
 * the untimed open before it) left: a run is a second or two, and one major collection landing
 * in it moved a round's rate by a tenth. `--expose-gc` is set on first use, not on import: the
 * bench imports every scenario file, and a run of the others has no use for the flag.
 */
let gc: (() => void) | undefined;
function collectGarbage(): void {
  if (!gc) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  }
  gc();
}

/**
 * Runs `steps` writers at once, each appending `count` records one after another; times only
 * the appends.
 */
async function timeAppends(
  subjects: string[],
  count: number,
  append: (step: number, n: number) => Promise<unknown>,
): Promise<Timed> {
  const steps = subjects.length;
  const latencies = new Float64Array(steps * count);
  collectGarbage();
  const started = performance.now();
  const cpu0 = process.cpuUsage();
  await Promise.all(
    Array.from({ length: steps }, async (_, step) => {
      for (let n = 0; n < count; n++) {
        const t0 = performance.now();
        await append(step, n);
        latencies[step * count + n] = performance.now() - t0;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { subjects, appends: steps * count, seconds, latencies, cpuUs: cpu.user + cpu.system };
}

async function leaseholdAppends(js: JetStreamClient, steps: number, count: number): Promise<Timed> {
  const journals = await Promise.all(
    Array.from({ length: steps }, () => Journal.open(js, taskFor(runId('lh')))),
  );
  const subjects = journals.map((j) => journalSubject(j.task().runId, j.task().stepId));
  const timed = await timeAppends(subjects, count, (step, n) => journals[step]!.append('entry', record(n)));
  await Promise.all(journals.map((j) => j.commit({ action: 'complete' })));
  return timed;
}

async function rawAppends(js: JetStreamClient, steps: number, count: number): Promise<Timed> {
  const writers = Array.from({ length: steps }, () => new RawFencedAppender(js, taskFor(runId('rw'))));
  return timeAppends(
    writers.map((w) => w.subject),
    count,
    (step, n) => writers[step]!.append('entry', record(n)),
  );
}

/** One private server, one websocket connection per subject. */
class JournalBench {
  server: NatsServer | null = null;
  connections: NatsConnection[] = [];
  leasehold!: JetStreamClient;
  raw!: JetStreamClient;

  /** `steps` × `count`: the warm-up is one unmeasured round of the scenario's own shape. */
  async start(ctx: BenchContext, steps: number, count: number): Promise<void> {
    this.server = await startNatsServer();
    const connect = async (name: string) => {
      const nc = await connectJournal(this.server!.wsUrl, { webSocket: WebSocket, name, reconnect: false });
      this.connections.push(nc);
      return nc;
    };
    const lhConn = await connect('bench-journal-leasehold');
    const rawConn = await connect('bench-journal-raw');
    await ensureJournalStream(await jetstreamManager(lhConn));
    this.leasehold = jetstream(lhConn);
    this.raw = jetstream(rawConn);
    // An unmeasured round of both subjects first: whichever subject runs first after a fresh
    // server (JIT, connection buffers, the store's first blocks) measured ~30% slow.
    const lh = await leaseholdAppends(this.leasehold, steps, count);
    const raw = await rawAppends(this.raw, steps, count);
    await this.assertSameRecords(lh.subjects[0]!, raw.subjects[0]!);
    ctx.log(`journal: nats-server ${this.server.wsUrl} (pid ${this.server.pid}), warmed up`);
  }

  /**
   * The anchor is only fair if it stores what the journal stores: the last entry of each
   * warm-up subject must carry the same headers, fence included, and a body of the same size.
   */
  async assertSameRecords(journalSubj: string, rawSubj: string): Promise<void> {
    const jsm = await this.leasehold.jetstreamManager(false);
    const lastEntry = async (subject: string) => {
      let msg = await jsm.streams.getMessage(JOURNAL_STREAM, { last_by_subj: subject });
      // The journal's last record is its commit; the fence names the entry before it.
      if (msg && msg.header.get('Dagnats-Journal-Type') !== 'entry') {
        const previous = Number(msg.header.get('Nats-Expected-Last-Subject-Sequence'));
        msg = await jsm.streams.getMessage(JOURNAL_STREAM, { seq: previous });
      }
      if (msg?.header.get('Dagnats-Journal-Type') !== 'entry')
        throw new Error(`journal bench: no entry on ${subject}`);
      return { subject, headers: [...msg.header.keys()].sort().join(','), bytes: msg.data.length };
    };
    const lh = await lastEntry(journalSubj);
    const rw = await lastEntry(rawSubj);
    if (lh.headers !== rw.headers || lh.bytes !== rw.bytes) {
      throw new Error(
        `journal bench: the anchor stores another record than the journal: ${JSON.stringify(rw)} vs ${JSON.stringify(lh)}`,
      );
    }
    if (!lh.headers.includes('Nats-Expected-Last-Subject-Sequence') || !lh.headers.includes('Nats-Msg-Id')) {
      throw new Error(`journal bench: records are not fenced: ${lh.headers}`);
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.connections.map((nc) => nc.close().catch(() => {})));
    this.connections = [];
    await this.server?.stop();
    this.server = null;
  }
}

function appendScenario(
  ctx: BenchContext,
  spec: { name: string; ratio: string; goal: number; steps: number; count: number; description: string },
): Scenario {
  const bench = new JournalBench();
  return {
    name: spec.name,
    description: spec.description,
    // A run is under a second: nine rounds cost little and steady the median on a shared box
    // (five left a spread of 0.77–1.06 around a goal of 0.95).
    rounds: 9,
    // In one process, 13 paired rounds three times: the journal's CPU an append over raw's
    // was 3.5–4.5 µs with the journal always first, 2.4–3.3 with the order alternated.
    alternate: true,
    // The harness runs teardown only after a setup that succeeded.
    setup: () =>
      bench.start(ctx, spec.steps, spec.count).catch(async (err: unknown) => {
        await bench.stop();
        throw err;
      }),
    teardown: () => bench.stop(),
    subjects: {
      leasehold: async () => metricsOf(await leaseholdAppends(bench.leasehold, spec.steps, spec.count)),
      raw: async () => metricsOf(await rawAppends(bench.raw, spec.steps, spec.count)),
    },
    ratios: [
      {
        name: spec.ratio,
        numerator: 'leasehold',
        denominator: 'raw',
        metric: 'appends_per_s',
        goal: { op: '>=', value: spec.goal },
      },
    ],
  };
}

export function scenarios(ctx: BenchContext): Scenario[] {
  const seq = ctx.smoke ? 200 : 2_000;
  // 16,000 appends a run (≈ 1.5 s): at 4,000 a run lasted 0.4 s, and the client's CPU per append
  // moved by half from round to round with whatever the machine or the collector did then.
  const perStep = ctx.smoke ? 25 : 2_000;
  return [
    appendScenario(ctx, {
      name: 'journal_append_seq',
      ratio: 'journal_append_seq_vs_raw',
      goal: 0.8,
      steps: 1,
      count: seq,
      description: `${seq} sequential fenced appends of one step (~150 B JSON entries), Journal.append vs raw JetStream publish`,
    }),
    appendScenario(ctx, {
      name: 'journal_append_c8',
      ratio: 'journal_append_vs_raw',
      goal: 0.95,
      steps: CONCURRENT_STEPS,
      count: perStep,
      description: `${CONCURRENT_STEPS} steps × ${perStep} fenced appends at once (each step sequential), Journal.append vs raw JetStream publish`,
    }),
  ];
}
