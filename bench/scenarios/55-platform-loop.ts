/**
 * platform_loop_http_c8: 8 HTTP claimers drain a 10k backlog through Leasehold's real Node
 * server (as `npm start` runs it; the wire scenarios' one when they ran just before) over
 * loopback keep-alive connections with a platform API key — looping `complete_and_claim`
 * (one request and one statement per item), and for comparison `claim` then `complete` (two
 * of each) — against graphile-worker's own worker loop at concurrency 8 in process, as
 * shipped (the anchor of claim_c8). graphile pays no HTTP at all, so the ratio prices the
 * whole platform lane: the clients' requests, parsing, auth, validation, the JSON answer and
 * the round trip, all on the same machine. Every subject starts from a freshly seeded,
 * vacuumed backlog.
 *
 * `floor` is the same clients looping the same endpoints on the HTTP floor
 * (bench/anchors/floor-server.ts: bare node:http + pg, one prepared statement per request,
 * the platform key checked inside it): what a platform lane over HTTP can reach on this
 * machine with nothing of Leasehold's in the way — no framework, validation, credential
 * cache, spans or error mapping. Its ratio to graphile-worker is the nearest honest limit
 * for Leasehold's. Both run with Leasehold's default pool (10 connections), and again with
 * `SMALL_POOL` (`leasehold_loop_pool3`, a server of its own with `LEASEHOLD_DB_POOL_SIZE=3`,
 * and `floor_pool3`): the setting this load is most sensitive to on a small database.
 *
 * Each subject also reports the CPU an item cost (ms), steadier than the rate on a machine
 * whose other tenants come and go: for Leasehold and the floor the server's node process, the
 * Postgres backends serving it and the clients' process; for graphile-worker its runner's process,
 * start-up included (its own backends come and go with each run, so they are not counted).
 */
import pg from 'pg';
import { type GraphileAnchor, graphileAnchor } from '../anchors/graphile.js';
import {
  backendCpuDelta,
  backendCpuMs,
  cpuMs,
  FLOOR_ENTRY,
  type FloorServer,
  scriptProcess,
  startFloor,
} from '../anchors/wire-cycle.js';
import { resetLeasehold, seedClaimBacklog } from '../lib/db.js';
import type { BenchContext, Metrics, Scenario } from '../lib/harness.js';
import { type LeaseholdServer, sharedServer, startLeaseholdServer } from '../lib/node-server.js';
import { drainPlatformHttp } from '../lib/platform-drain.js';

const CONCURRENCY = 8;
/** Leasehold's default pool size (src/config.ts), which the shared server runs with. */
const DEFAULT_POOL = 10;
/**
 * Fewer connections than claimers: this machine's two cores plus one. Eight claimers on ten
 * connections put eight claims in the database at once, each stepping past the rows the
 * others hold locked (SKIP LOCKED) on two cores; three at a time waste less of them.
 */
const SMALL_POOL = 3;

/** A server the claimers drive: its address and the process whose CPU it spends. */
interface Target {
  baseURL: string;
  pid: number;
}

export function scenarios(ctx: BenchContext): Scenario[] {
  const backlog = ctx.smoke ? 2_000 : 10_000;
  const count = ctx.smoke ? 300 : 2_400;
  let admin: pg.Pool | undefined;
  let lh: LeaseholdServer | undefined;
  let lhSmall: LeaseholdServer | undefined;
  let graphile: GraphileAnchor | undefined;
  let floor: Target | undefined;
  let floorSmall: Target | undefined;
  const floors: FloorServer[] = [];
  let key = '';
  const leasehold = (l: LeaseholdServer): Target => ({ baseURL: l.server.baseURL, pid: l.scriptPid });
  const startFloorTarget = async (poolSize: number): Promise<Target> => {
    const f = await startFloor(ctx.databaseUrl, 'node', poolSize);
    floors.push(f);
    return { baseURL: f.baseURL, pid: scriptProcess(f.pid, FLOOR_ENTRY) };
  };
  /** Settles `n` items through the server at `on`. */
  const drain = async (on: Target, loop: boolean, n = count): Promise<Metrics> => {
    await resetLeasehold(admin!);
    await seedClaimBacklog(admin!, backlog);
    const server0 = cpuMs(on.pid);
    const backends0 = await backendCpuMs(admin!);
    const client0 = process.cpuUsage();
    const rate = await drainPlatformHttp({
      baseURL: on.baseURL,
      key,
      concurrency: CONCURRENCY,
      count: n,
      loop,
    });
    const client = process.cpuUsage(client0);
    const pgMs = backendCpuDelta(backends0, await backendCpuMs(admin!));
    return {
      items_per_s: rate,
      server_cpu_ms: (cpuMs(on.pid) - server0) / n,
      pg_cpu_ms: pgMs / n,
      client_cpu_ms: (client.user + client.system) / 1000 / n,
    };
  };
  const teardown = async () => {
    await graphile?.close();
    await Promise.all(floors.splice(0).map((f) => f.stop()));
    await lhSmall?.server.stop();
    if (lh) sharedServer.release();
    await admin?.end();
    graphile = undefined;
    floor = undefined;
    floorSmall = undefined;
    lhSmall = undefined;
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
    lhSmall = await startLeaseholdServer(ctx.databaseUrl, { LEASEHOLD_DB_POOL_SIZE: String(SMALL_POOL) });
    floor = await startFloorTarget(DEFAULT_POOL);
    floorSmall = await startFloorTarget(SMALL_POOL);
    // An untimed pass of each request path, so the first round does not pay the JIT's warm-up.
    if (!ctx.smoke) {
      await drain(leasehold(lh), true, 1_000);
      await drain(leasehold(lh), false, 1_000);
      await drain(leasehold(lhSmall), true, 1_000);
      await drain(floor, true, 1_000);
      await drain(floorSmall, true, 1_000);
    }
    ctx.log(`platform_loop_http: set up in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  };
  return [
    {
      name: `platform_loop_http_c${CONCURRENCY}`,
      description:
        `${CONCURRENCY} HTTP clients (keep-alive, loopback, real Node server) settle ${count.toLocaleString('en-US')} ` +
        `items from a ${backlog.toLocaleString('en-US')} backlog: complete_and_claim in a loop, or claim then complete; ` +
        'the same loop on the HTTP floor (node:http + pg, one statement per request); both again with ' +
        `${SMALL_POOL} database connections instead of ${DEFAULT_POOL}; ` +
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
      // A drain lasts about a second, so a round's figures move with the machine's other
      // tenants (one run put the floor at 0.72-0.82 of graphile and Leasehold at 0.81-1.24 of
      // the floor): five rounds, their order alternating, so no subject always runs first
      // after graphile-worker's in-process loop winds down.
      rounds: 5,
      alternate: true,
      subjects: {
        leasehold_loop: () => drain(leasehold(lh!), true),
        leasehold_claim_complete: () => drain(leasehold(lh!), false),
        [`leasehold_loop_pool${SMALL_POOL}`]: () => drain(leasehold(lhSmall!), true),
        floor: () => drain(floor!, true),
        [`floor_pool${SMALL_POOL}`]: () => drain(floorSmall!, true),
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
        // How near the platform lane comes to the HTTP floor, and how near the floor comes to
        // graphile-worker's in-process loop: the nearest honest limit of the ratio above.
        {
          name: `platform_loop_http_c${CONCURRENCY}_vs_floor`,
          numerator: 'leasehold_loop',
          denominator: 'floor',
          metric: 'items_per_s',
        },
        {
          name: `platform_loop_http_c${CONCURRENCY}_floor_vs_graphile`,
          numerator: 'floor',
          denominator: 'graphile',
          metric: 'items_per_s',
        },
        // The same with fewer database connections than claimers (see SMALL_POOL).
        {
          name: `platform_loop_http_c${CONCURRENCY}_pool${SMALL_POOL}_vs_graphile`,
          numerator: `leasehold_loop_pool${SMALL_POOL}`,
          denominator: 'graphile',
          metric: 'items_per_s',
        },
        {
          name: `platform_loop_http_c${CONCURRENCY}_pool${SMALL_POOL}_vs_floor_pool${SMALL_POOL}`,
          numerator: `leasehold_loop_pool${SMALL_POOL}`,
          denominator: `floor_pool${SMALL_POOL}`,
          metric: 'items_per_s',
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
