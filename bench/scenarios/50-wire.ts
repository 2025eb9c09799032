/**
 * The work API over HTTP, as self-hosted workers drive it.
 *
 * - `wire_cycle`: 8 workers loop poll → ack → heartbeat → stop{force} against Leasehold's
 *   real Node server (as `npm start` runs it) and against the HTTP floor for the same work
 *   (bench/anchors/floor-server.ts: bare node:http + pg, one statement per request, the key
 *   checked inside it), and the same floor served through Hono on @hono/node-server
 *   (`floor_hono`: what the framework Leasehold is built on costs by itself). Same client, same backlog, same database; the ratio is Leasehold's
 *   completed cycles per second over the floor's, round by round. Each subject also reports
 *   the CPU a cycle cost its server process and the Postgres backends (ms per cycle).
 * - `wire_memory`: the resident set of Leasehold's node process while it serves that cycle
 *   (sampled from /proc), and the gzipped Worker bundle (scripts/bundle-size.mjs). Named
 *   with `wire` so `--only wire` runs it with the cycle it samples.
 *
 * Both servers start once per scenario (Leasehold's is shared with the scenarios that run
 * right after, `sharedServer`); every measurement starts from a freshly seeded backlog.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import pg from 'pg';
import {
  backendCpuDelta,
  backendCpuMs,
  cpuMs,
  createWireEnvironment,
  ensureSessions,
  FLOOR_ENTRY,
  type FloorServer,
  rssMb,
  runWireCycle,
  sampleRss,
  scriptProcess,
  seedBacklog,
  startFloor,
  type WireEnvironment,
} from '../anchors/wire-cycle.js';
import type { BenchContext, Metrics, Scenario } from '../lib/harness.js';
import { type LeaseholdServer, sharedServer } from '../lib/node-server.js';

const WORKERS = 8;
/** Untimed load per server before the first round (full runs), in windows the backlog outlasts. */
const WARM_MS = 8_000;
const WARM_WINDOW_MS = 4_000;
/** How often the server's RSS is read while the cycle runs. */
const RSS_EVERY_MS = 50;

interface Sizes {
  warmupMs: number;
  windowMs: number;
  /** Items per measurement: more than the fastest subject completes in warm-up plus window. */
  backlog: number;
}

const FULL: Sizes = { warmupMs: 1_000, windowMs: 5_000, backlog: 15_000 };
const SMOKE: Sizes = { warmupMs: 200, windowMs: 700, backlog: 3_000 };

/** The gzipped Worker bundle in KiB, built at most once per bench run. */
let bundleBuild: Promise<number> | undefined;
function bundleGzipKib(): Promise<number> {
  bundleBuild ??= buildBundle();
  return bundleBuild;
}

/** The gzipped Worker bundle in KiB, by the project's own script (a deploy's dry-run build). */
function buildBundle(): Promise<number> {
  const script = path.resolve(import.meta.dirname, '../../scripts/bundle-size.mjs');
  return new Promise((resolve, reject) => {
    // Exit 1 means over budget: still a measurement. Exit 2 is a failed build.
    execFile(process.execPath, [script], { encoding: 'utf8' }, (err, stdout, stderr) => {
      // The API Worker's line: the script prints the static assets and the brain Worker too.
      const m = /API Worker .*gzip ([\d.]+) KiB/.exec(stdout);
      if (m && (!err || err.code === 1)) resolve(Number(m[1]));
      else reject(new Error(`bundle-size.mjs failed: ${err?.message ?? 'no size printed'}\n${stderr}`));
    });
  });
}

/** What each scenario sets up: a seeding pool and an environment of its own. */
interface Fixture {
  db: pg.Pool;
  lh: LeaseholdServer;
  environment: WireEnvironment;
}

async function fixture(ctx: BenchContext, sizes: Sizes): Promise<Fixture> {
  const lh = await sharedServer.acquire(ctx.databaseUrl);
  const db = new pg.Pool({ connectionString: ctx.databaseUrl, max: 2 });
  try {
    const environment = await createWireEnvironment(lh.server.baseURL, lh.server.adminKey);
    await ensureSessions(db, environment.environmentId, sizes.backlog);
    return { db, lh, environment };
  } catch (err) {
    sharedServer.release();
    await db.end();
    throw err;
  }
}

export function scenarios(ctx: BenchContext): Scenario[] {
  const sizes = ctx.smoke ? SMOKE : FULL;
  /**
   * One measurement. Besides the rate and latencies, what a completed cycle cost in CPU: the
   * server's node process, and the Postgres backends serving it — steadier than the rate
   * on a machine whose other tenants come and go.
   */
  const cycle = async (f: Fixture, baseURL: string, serverPid: number): Promise<Metrics> => {
    await seedBacklog(f.db, f.environment.environmentId, sizes.backlog);
    const server = cpuMs(serverPid);
    const backends = await backendCpuMs(f.db);
    const r = await runWireCycle({ baseURL, environment: f.environment, workers: WORKERS, ...sizes });
    const backendMs = backendCpuDelta(backends, await backendCpuMs(f.db));
    return {
      cycles_per_s: r.cyclesPerS,
      p50_ms: r.p50Ms,
      p99_ms: r.p99Ms,
      server_cpu_ms: (cpuMs(serverPid) - server) / r.completed,
      pg_cpu_ms: backendMs / r.completed,
    };
  };
  /**
   * An untimed run per server, so no measured round pays for the JIT's warm-up: Leasehold's
   * server, with far more code on the path than the floors, reaches its steady CPU per cycle
   * only after about 8 s of this load (1.7 ms of user CPU per cycle after 2 s, 1.2 after 10).
   * Every server gets the same.
   */
  const warm = async (f: Fixture, baseURL: string) => {
    for (let ran = 0; ran < WARM_MS; ran += WARM_WINDOW_MS) {
      await seedBacklog(f.db, f.environment.environmentId, sizes.backlog);
      await runWireCycle({
        baseURL,
        environment: f.environment,
        workers: WORKERS,
        warmupMs: 0,
        windowMs: WARM_WINDOW_MS,
      });
    }
  };

  let wire: Fixture | undefined;
  let floor: FloorServer | undefined;
  let floorHono: FloorServer | undefined;
  let floorPid = 0;
  let floorHonoPid = 0;
  const wireCycle: Scenario = {
    name: 'wire_cycle',
    description: `${WORKERS} workers loop poll → ack → heartbeat → stop over HTTP (keep-alive); complete cycles/s`,
    // Three rounds left the median at the mercy of one: two full runs half an hour apart on
    // the same code gave 0.98 and 0.87. Each subject seeds its own backlog, so the order may
    // alternate, and no subject always follows the same other.
    rounds: 5,
    alternate: true,
    async setup() {
      const started = performance.now();
      // Smoke builds the bundle wire_memory reports while this scenario runs (it must be
      // quick, not quiet); a full run builds it in wire_memory's setup, out of every window.
      if (ctx.smoke) void bundleGzipKib().catch(() => {});
      const [f, fl, fh] = await Promise.allSettled([
        fixture(ctx, sizes),
        startFloor(ctx.databaseUrl),
        startFloor(ctx.databaseUrl, 'hono'),
      ]);
      if (f.status === 'fulfilled') wire = f.value;
      if (fl.status === 'fulfilled') floor = fl.value;
      if (fh.status === 'fulfilled') floorHono = fh.value;
      // The harness tears down only what set up: undo the part that succeeded.
      const failed = [f, fl, fh].find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) {
        await this.teardown?.();
        throw failed.reason;
      }
      floorPid = scriptProcess(floor!.pid, FLOOR_ENTRY);
      floorHonoPid = scriptProcess(floorHono!.pid, FLOOR_ENTRY);
      if (!ctx.smoke) {
        await warm(wire!, wire!.lh.server.baseURL);
        await warm(wire!, floor!.baseURL);
        await warm(wire!, floorHono!.baseURL);
      }
      const took = ((performance.now() - started) / 1000).toFixed(1);
      ctx.log(`wire_cycle: servers up${ctx.smoke ? '' : ' and warmed'} in ${took} s`);
    },
    subjects: {
      leasehold: () => cycle(wire!, wire!.lh.server.baseURL, wire!.lh.scriptPid),
      floor: () => cycle(wire!, floor!.baseURL, floorPid),
      floor_hono: () => cycle(wire!, floorHono!.baseURL, floorHonoPid),
    },
    ratios: [
      {
        name: 'wire_cycle_vs_floor',
        numerator: 'leasehold',
        denominator: 'floor',
        metric: 'cycles_per_s',
        goal: { op: '>=', value: 0.9 },
      },
      {
        name: 'wire_cycle_vs_floor_hono',
        numerator: 'leasehold',
        denominator: 'floor_hono',
        metric: 'cycles_per_s',
      },
      {
        name: 'wire_cycle_floor_hono_vs_floor',
        numerator: 'floor_hono',
        denominator: 'floor',
        metric: 'cycles_per_s',
      },
    ],
    async teardown() {
      await floor?.stop();
      await floorHono?.stop();
      if (wire) {
        sharedServer.release();
        await wire.db.end();
      }
      wire = undefined;
      floor = undefined;
      floorHono = undefined;
    },
  };

  let mem: Fixture | undefined;
  let bundle: Promise<number> | undefined;
  const wireMemory: Scenario = {
    name: 'wire_memory',
    description: `Leasehold's node RSS while serving ${WORKERS} wire-cycle workers; gzipped Worker bundle`,
    // Levels with no ratio or goal: one round of the wire cycle gives them.
    rounds: 1,
    async setup() {
      const started = performance.now();
      bundle = bundleGzipKib();
      if (!ctx.smoke) await bundle.catch(() => {});
      mem = await fixture(ctx, sizes);
      ctx.log(`wire_memory: set up in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    },
    subjects: {
      leasehold: async () => {
        const f = mem!;
        await seedBacklog(f.db, f.environment.environmentId, sizes.backlog);
        const before = rssMb(f.lh.scriptPid);
        const sampler = sampleRss(f.lh.scriptPid, RSS_EVERY_MS);
        let rss: { peakMb: number; lastMb: number };
        try {
          await runWireCycle({
            baseURL: f.lh.server.baseURL,
            environment: f.environment,
            workers: WORKERS,
            ...sizes,
          });
        } finally {
          rss = sampler.stop();
        }
        return {
          rss_mb_start: before,
          rss_mb_peak: rss.peakMb,
          rss_mb_end: rss.lastMb,
          bundle_gzip_kib: await bundle!,
        };
      },
    },
    async teardown() {
      await bundle?.catch(() => {});
      if (mem) {
        sharedServer.release();
        await mem.db.end();
      }
      mem = undefined;
    },
  };

  return [wireCycle, wireMemory];
}
