/**
 * The wire cycle a self-hosted worker runs — poll → ack → heartbeat (NO_HEARTBEAT) → stop
 * {force:true}, the official SDK's worker sequence for an item it finishes at once — driven
 * over HTTP by concurrent workers against any server that answers the work API (Leasehold's
 * Node server, or the floor in floor-server.ts), plus what the scenarios around it need: the
 * environment and its key, a backlog seeded by SQL, the floor as a child process, and the
 * RSS of a server's node process.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { percentile } from '../lib/harness.js';
import { HttpClient } from '../lib/http-client.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');
export const FLOOR_ENTRY = path.join(import.meta.dirname, 'floor-server.ts');

/** What the SDK (1.14.0) sends on every work call (docs/wire.md, "What the SDK sends"). */
export function sdkHeaders(key: string): Record<string, string> {
  return {
    authorization: `Bearer ${key}`,
    'anthropic-beta': 'managed-agents-2026-04-01',
    'anthropic-version': '2026-10-21',
    accept: 'application/json',
    'user-agent': 'Anthropic/JS 1.14.0',
    'x-stainless-lang': 'js',
    'x-stainless-package-version': '1.14.0',
    'x-stainless-os': 'Linux',
    'x-stainless-arch': 'x64',
    'x-stainless-runtime': 'node',
    'x-stainless-runtime-version': process.version,
    'x-stainless-retry-count': '0',
    'x-stainless-timeout': '600',
  };
}

export interface WireEnvironment {
  environmentId: string;
  /** The environment key's secret (Bearer). */
  key: string;
}

/** A self_hosted environment and a key for it, made through the management API as an operator would. */
export async function createWireEnvironment(baseURL: string, adminKey: string): Promise<WireEnvironment> {
  const call = async (route: string, body: unknown) => {
    const res = await fetch(`${baseURL}${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`POST ${route}: ${res.status} ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  };
  const env = await call('/v1/environments', { name: 'bench wire', config: { type: 'self_hosted' } });
  const environmentId = env.id as string;
  const issued = await call(`/v1/environments/${environmentId}/keys`, { name: 'bench wire workers' });
  return { environmentId, key: issued.key as string };
}

/** The environment's sessions `<env>_s1 … _sN` (one per item: a session holds one live item per kind). */
export async function ensureSessions(db: pg.Pool, environmentId: string, n: number): Promise<void> {
  await db.query(
    `INSERT INTO sessions (id, environment_id)
     SELECT $1 || '_s' || g, $1 FROM generate_series(1, $2::int) g
     ON CONFLICT DO NOTHING`,
    [environmentId, n],
  );
}

/**
 * Replaces all work with `n` queued poll-lane tool_exec items of the environment, oldest
 * first, ids shaped as Leasehold mints them, then settles the statistics: every run starts
 * from the same physical table. `ensureSessions` must have made `n` sessions.
 */
export async function seedBacklog(db: pg.Pool, environmentId: string, n: number): Promise<void> {
  await db.query('TRUNCATE work_items, worker_polls');
  const tag = Date.now()
    .toString(36)
    .replace(/[ilou]/g, '0');
  await db.query(
    `INSERT INTO work_items (id, environment_id, session_id, kind, lane, created_at, updated_at)
     SELECT 'work_' || lpad($3 || g, 24, '0'), $1, $1 || '_s' || g, 'tool_exec', 'poll',
            now() - make_interval(secs => ($2::int - g) / 1e6), now()
       FROM generate_series(1, $2::int) g`,
    [environmentId, n, tag],
  );
  await db.query('VACUUM ANALYZE work_items');
  await db.query('VACUUM ANALYZE worker_polls');
}

export interface CycleOptions {
  baseURL: string;
  environment: WireEnvironment;
  workers: number;
  /** Cycles run but not counted first, so the window starts in steady state. */
  warmupMs: number;
  /** Cycles completing within this window after the warm-up are counted. */
  windowMs: number;
}

export interface CycleResult {
  /** Cycles completed inside the window. */
  cycles: number;
  /** Cycles completed in the whole run, warm-up and the last ones past the window included. */
  completed: number;
  cyclesPerS: number;
  p50Ms: number;
  p99Ms: number;
}

interface WireWorkBody {
  id: string;
  environment_id: string;
  state: string;
}

function expectStatus(step: string, status: number, text: string, want: number): void {
  if (status !== want) throw new Error(`${step}: expected ${want}, got ${status} ${text.slice(0, 300)}`);
}

/**
 * `workers` loops of poll → ack → heartbeat → stop{force} until the window ends. Throughput
 * counts the cycles that complete inside the window (the loops run continuously from the
 * warm-up on, so that is the steady rate); latency is each counted cycle's four requests.
 * Any unexpected answer fails the run, and so does an empty poll: the backlog is sized so
 * it never runs dry.
 */
export async function runWireCycle(options: CycleOptions): Promise<CycleResult> {
  const { environment, workers } = options;
  const client = new HttpClient(options.baseURL, workers);
  const base = sdkHeaders(environment.key);
  const started = performance.now();
  const windowStart = started + options.warmupMs;
  const windowEnd = windowStart + options.windowMs;
  const latencies: number[] = [];
  let completed = 0;
  let failed: Error | undefined;

  const worker = async () => {
    const pollHeaders = {
      ...base,
      'anthropic-worker-id': `bench-${randomUUID()}`,
      'x-stainless-helper': 'environments-work-poller',
    };
    const workerHeaders = { ...base, 'x-stainless-helper': 'environments-worker' };
    const stopHeaders = { ...workerHeaders, 'content-type': 'application/json' };
    const pollPath = `/v1/environments/${environment.environmentId}/work/poll`;
    while (!failed) {
      const t0 = performance.now();
      if (t0 >= windowEnd) return;
      const polled = await client.request('GET', pollPath, pollHeaders);
      expectStatus('poll', polled.status, polled.text, 200);
      const work = JSON.parse(polled.text) as WireWorkBody | null;
      if (work === null) throw new Error('poll: the backlog ran dry; seed more items for this window');
      // As the SDK's poller: the item's own environment_id builds its paths.
      const itemPath = `/v1/environments/${work.environment_id}/work/${work.id}`;
      const acked = await client.request('POST', `${itemPath}/ack`, pollHeaders);
      expectStatus('ack', acked.status, acked.text, 200);
      if ((JSON.parse(acked.text) as WireWorkBody).state !== 'starting') {
        throw new Error(`ack: expected state starting, got ${acked.text}`);
      }
      const beat = await client.request(
        'POST',
        `${itemPath}/heartbeat?expected_last_heartbeat=NO_HEARTBEAT`,
        workerHeaders,
      );
      expectStatus('heartbeat', beat.status, beat.text, 200);
      const lease = JSON.parse(beat.text) as { state: string; lease_extended: boolean };
      if (lease.state !== 'active' || !lease.lease_extended) {
        throw new Error(`heartbeat: expected an extended active lease, got ${beat.text}`);
      }
      const stopped = await client.request('POST', `${itemPath}/stop`, stopHeaders, '{"force":true}');
      expectStatus('stop', stopped.status, stopped.text, 200);
      const t1 = performance.now();
      completed++;
      if (t1 >= windowStart && t1 <= windowEnd) latencies.push(t1 - t0);
    }
  };

  try {
    await Promise.all(
      Array.from({ length: workers }, () =>
        worker().catch((err: Error) => {
          failed ??= err;
        }),
      ),
    );
  } finally {
    client.close();
  }
  if (failed) throw failed;
  if (!latencies.length) throw new Error('no cycle completed within the window');
  return {
    cycles: latencies.length,
    completed,
    cyclesPerS: latencies.length / (options.windowMs / 1000),
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
}

export interface FloorServer {
  baseURL: string;
  /** The pid of the floor's own process group leader (`tsx`). */
  pid: number;
  stop(): Promise<void>;
}

/** How long the floor may take to listen (tsx compiles it first). */
const FLOOR_START_TIMEOUT_MS = 20_000;

/**
 * Starts floor-server.ts in its own process group on a free port; resolves once it listens.
 * `hono` serves the same handlers through Hono on @hono/node-server; `poolSize` sets its
 * pool's connections (default: Leasehold's default, 10).
 */
export async function startFloor(
  databaseUrl: string,
  framework: 'node' | 'hono' = 'node',
  poolSize?: number,
): Promise<FloorServer> {
  const child: ChildProcess = spawn(TSX, [FLOOR_ENTRY], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: '0',
      HOST: '127.0.0.1',
      FLOOR_FRAMEWORK: framework,
      ...(poolSize === undefined ? {} : { FLOOR_POOL_SIZE: String(poolSize) }),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const group = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {}
  };
  const onExit = () => group('SIGKILL');
  process.once('exit', onExit);
  let output = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const baseURL = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      group('SIGKILL');
      reject(new Error(`the floor server did not listen within ${FLOOR_START_TIMEOUT_MS} ms:\n${output}`));
    }, FLOOR_START_TIMEOUT_MS);
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-16_384);
      const m = /floor listening on (http:\/\/\S+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`the floor server exited before it listened:\n${output}`));
    });
  });
  let stopping: Promise<void> | undefined;
  return {
    baseURL,
    pid: child.pid!,
    stop: () => {
      stopping ??= (async () => {
        process.removeListener('exit', onExit);
        group('SIGTERM');
        const timer = setTimeout(() => group('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      })();
      return stopping;
    },
  };
}

function parentOf(pid: number): number | null {
  try {
    // `pid (comm) state ppid …`; comm may hold spaces or parentheses, so read after the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null;
  }
}

/**
 * The process that runs the server's script under `topPid`: the deepest descendant whose
 * command line names `entry` (`tsx` runs a script in a child node process, as for the floor),
 * else `topPid` itself (`npm start`'s launcher imports the script in its own process).
 */
export function scriptProcess(topPid: number, entry: string): number {
  const pids = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number);
  const children = new Map<number, number[]>();
  for (const pid of pids) {
    const ppid = parentOf(pid);
    if (ppid !== null) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  }
  let found = topPid;
  let frontier = [topPid];
  while (frontier.length) {
    const next: number[] = [];
    for (const pid of frontier) {
      for (const child of children.get(pid) ?? []) {
        let cmdline = '';
        try {
          cmdline = readFileSync(`/proc/${child}/cmdline`, 'utf8');
        } catch {}
        if (cmdline.includes(entry)) found = child;
        next.push(child);
      }
    }
    frontier = next;
  }
  return found;
}

/** CPU time (user + system) a process has used so far, in ms (clock-tick resolution). */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_S;
}
/** `getconf CLK_TCK` on Linux (USER_HZ, fixed at 100 for user space). */
const CLOCK_TICKS_PER_S = 100;

/**
 * CPU used so far by the database's client backends other than the caller's own, by pid
 * (ms). A backend that appears later started from zero; one that exited took its CPU along.
 */
export async function backendCpuMs(db: Pick<pg.Pool, 'query'>): Promise<Map<number, number>> {
  const { rows } = await db.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity
      WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`,
  );
  const out = new Map<number, number>();
  for (const { pid } of rows) {
    try {
      out.set(pid, cpuMs(pid));
    } catch {
      // Ended since the query.
    }
  }
  return out;
}

/** The CPU the backends used between two `backendCpuMs` readings, in ms. */
export function backendCpuDelta(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, ms] of after) total += ms - (before.get(pid) ?? 0);
  return total;
}

/** The process's resident set (VmRSS) in MiB. */
export function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  if (!m) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) / 1024;
}

/** Samples `rssMb(pid)` every `everyMs` until stopped; returns the peak and the last sample. */
export function sampleRss(pid: number, everyMs: number): { stop(): { peakMb: number; lastMb: number } } {
  let peakMb = rssMb(pid);
  let lastMb = peakMb;
  const timer = setInterval(() => {
    lastMb = rssMb(pid);
    peakMb = Math.max(peakMb, lastMb);
  }, everyMs);
  return {
    stop: () => {
      clearInterval(timer);
      lastMb = rssMb(pid);
      peakMb = Math.max(peakMb, lastMb);
      return { peakMb, lastMb };
    },
  };
}
