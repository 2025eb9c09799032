/**
 * pickup_latency: how soon a waiting worker learns of new work. Every subject is idle with an
 * empty queue when a sample starts; a sample is one enqueue and ends when the consumer has the
 * item. Samples run one after another, so this is latency, not throughput.
 *
 * - leasehold: the real Node server. A worker's long poll (`GET …/work/poll?block_ms=999`,
 *   environment key) is parked server-side; the driver enqueues a tool_exec item over the
 *   platform lane (`POST /v1/platform/work`) for the session it enqueued for last time (its
 *   item was stopped, so the slot is free: a session's next tool call) and the sample is the
 *   time from just before that request is sent to the poll's complete response.
 * - leasehold_new_session: the same, each enqueue naming a session never seen before, which
 *   the platform lane binds to the environment first (a session's first item: the enqueue
 *   fails on the unknown session, then binds and enqueues in a transaction).
 * - listen_notify: the floor: a bare NOTIFY heard by a LISTENing connection.
 * - graphile: graphile-worker, addJob → the task handler starts (LISTEN/NOTIFY wake-up).
 * - pgboss: pg-boss, send → the handler starts (pg-boss 10 polls every 0.5 s at best).
 */
import http from 'node:http';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import pg from 'pg';
import { type RunningServer, startServer } from '../../test/helpers/server.js';
import { startGraphilePickup } from '../anchors/pickup-graphile.js';
import { openNotifyProbe } from '../anchors/pickup-listen.js';
import { PGBOSS_POLL_SECONDS, startPgBossPickup } from '../anchors/pickup-pgboss.js';
import { type BenchContext, type Metrics, percentile, type Scenario } from '../lib/harness.js';

/** Samples per round and subject (pg-boss: each costs half a polling interval on average). */
const FULL = { samples: 300, pgboss: 30, warmup: 20, pgbossWarmup: 1 };
const SMOKE = { samples: 30, pgboss: 3, warmup: 3, pgbossWarmup: 0 };
/** The poll's wait: the SDK's cap. A sample is enqueued long before it runs out. */
const BLOCK_MS = 999;
/** How long a parked poll may take to show up server-side before the sample is given up. */
const PARK_TIMEOUT_MS = 500;
/** Polls in a row that may go unseen before the run stops (the statement below no longer matches). */
const MAX_UNSEEN = 3;
/**
 * The poll's statement (src/queue/poll.ts) as pg_stat_activity shows it: its `finalized` step,
 * after the worker's poll record when the poll carries one, and only there.
 */
const POLL_STATEMENT = 'WITH %finalized AS (%';

export function scenarios(ctx: BenchContext): Scenario[] {
  const sizes = ctx.smoke ? SMOKE : FULL;
  let leasehold: LeaseholdPickup | null = null;
  return [
    {
      name: 'pickup_latency',
      description:
        `enqueue → a waiting consumer has the item, sequential samples (${sizes.samples} per round; ` +
        `pg-boss ${sizes.pgboss}, sent at a random phase of its ${PGBOSS_POLL_SECONDS} s poll): ` +
        'leasehold = platform-lane POST until a parked long poll (block_ms=999) answers, over loopback HTTP ' +
        'to the real Node server, for a known session (leasehold) and a new one (leasehold_new_session); ' +
        'ratios are leasehold ÷ anchor on p50_ms, lower is better',
      // graphile's p50 has ranged 2.0–4.0 ms from one run to the next here: five rounds. pg-boss,
      // polling every half second, is context only (no ratio): one round of more samples.
      rounds: 5,
      once: ['pgboss'],
      setup: async () => {
        leasehold = await startLeaseholdPickup(ctx.databaseUrl);
      },
      teardown: async () => {
        await leasehold?.close();
        leasehold = null;
      },
      subjects: {
        leasehold: async () => summarise(await repeat(sizes, () => leasehold!.sample(false))),
        leasehold_new_session: async () => summarise(await repeat(sizes, () => leasehold!.sample(true))),
        listen_notify: async () => {
          const probe = await openNotifyProbe(ctx.databaseUrl);
          try {
            return summarise(await repeat(sizes, () => probe.sample()));
          } finally {
            await probe.close();
          }
        },
        graphile: async () => {
          const graphile = await startGraphilePickup(ctx.databaseUrl);
          try {
            return summarise(await repeat(sizes, () => graphile.sample()));
          } finally {
            await graphile.close();
          }
        },
        pgboss: async () => {
          const boss = await startPgBossPickup(ctx.databaseUrl);
          try {
            return summarise(
              await repeat({ samples: sizes.pgboss, warmup: sizes.pgbossWarmup }, () => boss.sample()),
            );
          } finally {
            await boss.close();
          }
        },
      },
      ratios: [
        {
          name: 'pickup_p50_vs_listen_notify',
          numerator: 'leasehold',
          denominator: 'listen_notify',
          metric: 'p50_ms',
        },
        {
          name: 'pickup_p50_vs_graphile',
          numerator: 'leasehold',
          denominator: 'graphile',
          metric: 'p50_ms',
          goal: { op: '<=', value: 1 },
        },
      ],
      goals: [
        { subject: 'leasehold', metric: 'p50_ms', goal: { op: '<=', value: 2 } },
        { subject: 'leasehold', metric: 'p99_ms', goal: { op: '<=', value: 10 } },
      ],
    },
  ];
}

/** `warmup` samples thrown away, then `samples` kept. */
async function repeat(
  sizes: { samples: number; warmup: number },
  sample: () => Promise<number>,
): Promise<number[]> {
  for (let i = 0; i < sizes.warmup; i++) await sample();
  const kept: number[] = [];
  for (let i = 0; i < sizes.samples; i++) kept.push(await sample());
  return kept;
}

function summarise(ms: number[]): Metrics {
  return {
    p50_ms: percentile(ms, 50),
    p99_ms: percentile(ms, 99),
    mean_ms: ms.reduce((a, b) => a + b, 0) / ms.length,
  };
}

// -------------------------------------------------------------------------------------------
// Leasehold: a parked long poll and a platform-lane enqueue over HTTP
// -------------------------------------------------------------------------------------------

interface LeaseholdPickup {
  /** One sample; `newSession`: the enqueue names a session never seen before, which it binds. */
  sample(newSession: boolean): Promise<number>;
  close(): Promise<void>;
}

interface Answer {
  status: number;
  body: string;
  /** performance.now() when the last byte of the response arrived. */
  at: number;
}

/**
 * A request on its own keep-alive connection (one agent per role, so the worker's poll and the
 * driver's enqueue never queue behind each other). Resolves when the whole response is in.
 */
function send(
  agent: http.Agent,
  base: URL,
  method: string,
  path: string,
  key: string,
  body?: unknown,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      {
        agent,
        host: base.hostname,
        port: base.port,
        method,
        path,
        headers: {
          authorization: `Bearer ${key}`,
          ...(payload === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            at: performance.now(),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

async function expectStatus(answer: Promise<Answer>, status: number, what: string): Promise<Answer> {
  const a = await answer;
  if (a.status !== status) throw new Error(`${what}: expected ${status}, got ${a.status}: ${a.body}`);
  return a;
}

/**
 * The server, an environment with its key (made through the management API, as an operator
 * would), and the driver's view of the server's database sessions.
 *
 * Parked means: the poll's first (empty) attempt has finished in the database. The server
 * watches the environment *before* that attempt, so from then on an enqueue can reach the
 * worker only through the wake-up, never through the first query — which is what a sample is
 * meant to time. The driver sees it in pg_stat_activity: the backend that ran the poll's
 * statement has gone idle after a timestamp read from the database's own clock just before
 * the poll was sent. No sleep stands in for it.
 */
async function startLeaseholdPickup(databaseUrl: string): Promise<LeaseholdPickup> {
  const server: RunningServer = await startServer({ databaseUrl });
  const base = new URL(server.baseURL);
  const workerAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const driverAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const observer = new pg.Client({
    connectionString: databaseUrl,
    application_name: 'bench_pickup_observer',
  });
  try {
    await observer.connect();
    const env = await expectStatus(
      send(driverAgent, base, 'POST', '/v1/environments', server.adminKey, {
        name: 'bench pickup',
        config: { type: 'self_hosted' },
      }),
      200,
      'create environment',
    );
    const environmentId = (JSON.parse(env.body) as { id: string }).id;
    const issued = await expectStatus(
      send(driverAgent, base, 'POST', `/v1/environments/${environmentId}/keys`, server.adminKey, {
        name: 'bench pickup worker',
      }),
      201,
      'issue environment key',
    );
    const envKey = (JSON.parse(issued.body) as { key: string }).key;
    const workBase = `/v1/environments/${environmentId}/work`;
    let seq = 0;

    /** The database's clock, read just before a poll is sent. */
    const dbNow = async () =>
      (await observer.query<{ t: string }>('SELECT clock_timestamp()::text AS t')).rows[0]!.t;
    /** True once a backend has finished the poll statement after `since`. */
    const parkedSince = async (since: string) =>
      (
        await observer.query(
          `SELECT 1 FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid()
              AND state = 'idle' AND query LIKE $2 AND state_change > $1::timestamptz
            LIMIT 1`,
          [since, POLL_STATEMENT],
        )
      ).rowCount! > 0;

    const sample = async (newSession: boolean): Promise<number> => {
      for (let unseen = 0; ; unseen++) {
        if (unseen === MAX_UNSEEN) {
          throw new Error(
            `${MAX_UNSEEN} polls in a row were never seen parked: does the poll statement still look like ${POLL_STATEMENT}?`,
          );
        }
        const since = await dbNow();
        let answered = false;
        const polled = send(
          workerAgent,
          base,
          'GET',
          `${workBase}/poll?block_ms=${BLOCK_MS}`,
          envKey,
        ).finally(() => {
          answered = true;
        });
        const deadline = performance.now() + PARK_TIMEOUT_MS;
        let parked = false;
        while (!answered && performance.now() < deadline) {
          if (await parkedSince(since)) {
            parked = true;
            break;
          }
          await yieldToLoop();
        }
        if (!parked || answered) {
          // Not seen parked in time (or answered already): let this poll run out, try again.
          await polled;
          continue;
        }
        // The same session again (its last item was stopped, so its slot is free), or a new one.
        const sessionId = newSession ? `pick_${process.pid}_${++seq}` : `pick_${process.pid}_again`;
        const t0 = performance.now();
        const enqueued = send(driverAgent, base, 'POST', '/v1/platform/work', server.adminKey, {
          environment_id: environmentId,
          session_id: sessionId,
          kind: 'tool_exec',
        });
        const got = await expectStatus(polled, 200, 'poll');
        const latency = got.at - t0;
        const created = JSON.parse((await expectStatus(enqueued, 201, 'enqueue')).body) as {
          work: { id: string };
        };
        const work = JSON.parse(got.body) as { id: string } | null;
        if (work?.id !== created.work.id) {
          throw new Error(
            `the poll answered ${got.body.trim()}, not the item just enqueued (${created.work.id})`,
          );
        }
        // Out of the way of the next sample's poll: force-stopped, never re-offered.
        await expectStatus(
          send(workerAgent, base, 'POST', `${workBase}/${work.id}/stop`, envKey, { force: true }),
          200,
          'stop',
        );
        return latency;
      }
    };

    return {
      sample,
      close: async () => {
        workerAgent.destroy();
        driverAgent.destroy();
        await observer.end();
        await server.stop();
      },
    };
  } catch (err) {
    workerAgent.destroy();
    driverAgent.destroy();
    await observer.end().catch(() => {});
    await server.stop();
    throw err;
  }
}
