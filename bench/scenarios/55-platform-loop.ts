/**
 * platform_loop_http_c8: 8 HTTP claimers drain a 10k backlog through Leasehold's real Node
 * server (`tsx functions/node.ts`; the wire scenarios' one when they ran just before) over
 * loopback keep-alive connections with a platform API key — looping `complete_and_claim`
 * (one request and one statement per item), and for comparison `claim` then `complete` (two
 * of each) — against graphile-worker's own worker loop at concurrency 8 in process, as
 * shipped (the anchor of claim_c8). graphile pays no HTTP at all, so the ratio prices the
 * whole platform lane: the clients' requests, parsing, auth, validation, the JSON answer and
 * the round trip, all on the same machine. Every subject starts from a freshly seeded,
 * vacuumed backlog.
 *
 * Each subject also reports the CPU an item cost (ms), steadier than the rate on a machine
 * whose other tenants come and go: for Leasehold the server's node process, the Postgres
 * backends serving it and the clients' process; for graphile-worker its runner's process,
 * start-up included (its own backends come and go with each run, so they are not counted).
 */
import pg from 'pg';
import { type GraphileAnchor, graphileAnchor } from '../anchors/graphile.js';
import { backendCpuDelta, backendCpuMs, cpuMs } from '../anchors/wire-cycle.js';
import { resetLeasehold, seedClaimBacklog } from '../lib/db.js';
import type { BenchContext, Metrics, Scenario } from '../lib/harness.js';
import { type LeaseholdServer, sharedServer } from '../lib/node-server.js';
import { drainPlatformHttp } from '../lib/platform-drain.js';

const CONCURRENCY = 8;

export function scenarios(ctx: BenchContext): Scenario[] {
  const backlog = ctx.smoke ? 2_000 : 10_000;
  const count = ctx.smoke ? 300 : 4_000;
  let admin: pg.Pool | undefined;
  let lh: LeaseholdServer | undefined;
  let graphile: GraphileAnchor | undefined;
  let key = '';
  const drain = async (loop: boolean, n = count): Promise<Metrics> => {
    await resetLeasehold(admin!);
    await seedClaimBacklog(admin!, backlog);
    const server0 = cpuMs(lh!.scriptPid);
    const backends0 = await backendCpuMs(admin!);
    const client0 = process.cpuUsage();
    const rate = await drainPlatformHttp({
      baseURL: lh!.server.baseURL,
      key,
      concurrency: CONCURRENCY,
      count: n,
      loop,
    });
    const client = process.cpuUsage(client0);
    const pgMs = backendCpuDelta(backends0, await backendCpuMs(admin!));
    return {
      items_per_s: rate,
      server_cpu_ms: (cpuMs(lh!.scriptPid) - server0) / n,
      pg_cpu_ms: pgMs / n,
      client_cpu_ms: (client.user + client.system) / 1000 / n,
    };
  };
  const teardown = async () => {
    await graphile?.close();
    if (lh) sharedServer.release();
    await admin?.end();
    graphile = undefined;
    lh = undefined;
    admin = undefined;
  };
  const prepare = async () => {
    const started = performance.now();
    admin = new pg.Pool({ connectionString: ctx.databaseUrl, max: 2 });
    lh = await sharedServer.acquire(ctx.databaseUrl);
    const res = await fetch(`${lh.server.baseURL}/v1/api_keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${lh.server.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bench platform claimers', scope: 'platform' }),
    });
    if (res.status !== 201) throw new Error(`POST /v1/api_keys: ${res.status} ${await res.text()}`);
    key = ((await res.json()) as { key: string }).key;
    graphile = await graphileAnchor(ctx.databaseUrl);
    // An untimed pass of each request path, so the first round does not pay the JIT's warm-up.
    if (!ctx.smoke) {
      await drain(true, 1_500);
      await drain(false, 1_500);
    }
    ctx.log(`platform_loop_http: set up in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  };
  return [
    {
      name: `platform_loop_http_c${CONCURRENCY}`,
      description:
        `${CONCURRENCY} HTTP clients (keep-alive, loopback, real Node server) settle ${count.toLocaleString('en-US')} ` +
        `items from a ${backlog.toLocaleString('en-US')} backlog: complete_and_claim in a loop, or claim then complete; ` +
        `graphile-worker's worker loop at concurrency ${CONCURRENCY} in process`,
      async setup() {
        try {
          await prepare();
        } catch (err) {
          // The harness tears down only what set up: give back what this one took.
          await teardown();
          throw err;
        }
      },
      teardown,
      subjects: {
        leasehold_loop: () => drain(true),
        leasehold_claim_complete: () => drain(false),
        graphile: async () => {
          await graphile!.seed(backlog);
          const node0 = process.cpuUsage();
          const rate = await graphile!.drain({ concurrency: CONCURRENCY, count, tuning: 'default' });
          const node = process.cpuUsage(node0);
          return { items_per_s: rate, node_cpu_ms: (node.user + node.system) / 1000 / count };
        },
      },
      ratios: [
        {
          name: `platform_loop_http_c${CONCURRENCY}_vs_graphile`,
          numerator: 'leasehold_loop',
          denominator: 'graphile',
          metric: 'items_per_s',
          goal: { op: '>=', value: 0.8 },
        },
        // What the one-request step buys an HTTP claimer over two requests per item.
        {
          name: `platform_loop_http_c${CONCURRENCY}_vs_claim_complete`,
          numerator: 'leasehold_loop',
          denominator: 'leasehold_claim_complete',
          metric: 'items_per_s',
        },
      ],
    },
  ];
}
