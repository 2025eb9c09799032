/**
 * Both Workers as they deploy, served locally by workerd through Miniflare's Node API: the API
 * Worker (wrangler.toml) and the brain Worker (wrangler.brain.toml), each bundled by
 * `wrangler deploy --dry-run` exactly as a deploy uploads it, with the API Worker's service
 * binding `BRAIN` to the brain. PostgreSQL is reached through the Neon driver and a local
 * wsproxy (ws-proxy.ts), NATS over a websocket listener, the Messages API wherever
 * `modelBaseUrl` points. For Node-side tests (the SDK's EnvironmentWorker spawns bash, so it
 * cannot run inside workerd) and the benchmark.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { Log, LogLevel, Miniflare } from 'miniflare';
import { startWsProxy, type WsProxy } from './ws-proxy.js';

export const ROOT = path.resolve(import.meta.dirname, '../..');
const WRANGLER = path.join(ROOT, 'node_modules/.bin/wrangler');
/** The bundler is quick (≈ 1 s a Worker); this only stops a hung one. */
const BUILD_TIMEOUT_MS = 60_000;
/** How much of workerd's output is kept for failure messages. */
const MAX_OUTPUT = 64 * 1024;

export const API_WORKER = 'leasehold';
export const BRAIN_WORKER = 'leasehold-brain';

export interface WorkersOptions {
  /** A postgres:// URL to a migrated database (reached through a wsproxy this helper starts). */
  databaseUrl: string;
  /** ws:// URL of a nats-server's websocket listener, the journal stream provisioned (the brain needs one). */
  natsUrl?: string;
  /** The first admin API key (LEASEHOLD_ADMIN_KEY). */
  adminKey: string;
  /** The Messages API the brain calls (LEASEHOLD_MODEL=anthropic); the brain needs both. */
  modelBaseUrl?: string;
  modelApiKey?: string;
  /** Run the brain Worker and bind it as BRAIN (default true); false: the API Worker alone. */
  brain?: boolean;
  /** More settings for the API Worker (e.g. LEASEHOLD_LISTEN). */
  settings?: Record<string, string>;
}

export interface RunningWorkers {
  /** The API Worker's `http://127.0.0.1:<port>`. */
  baseURL: string;
  /** Runs the brain Worker's cron handler once (the sweep) and resolves when it is done. */
  sweep(): Promise<void>;
  /** Everything workerd wrote so far (the last 64 KiB): the Workers' console.warn/error. */
  output(): string;
  /** The wsproxy between the Workers and PostgreSQL (its `delayMs` stands in for the network). */
  wsProxy: WsProxy;
  close(): Promise<void>;
}

/**
 * The settings wrangler reads from `config` (a wrangler config at the root). wrangler is loaded
 * on first use, not with this module: it loads `node:domain`, which wraps the construction and
 * every `emit` of each EventEmitter in the process (`pg` makes one per query), and the bench
 * runs the scenarios that import this module in the process that measures every other one.
 */
export async function wranglerSettings(config: string) {
  const { unstable_getMiniflareWorkerOptions } = await import('wrangler');
  return unstable_getMiniflareWorkerOptions(path.join(ROOT, config));
}

/** Bundles the Worker of `config` (a wrangler config at the root) into `outdir`; its main module's path. */
export async function buildWorker(config: string, outdir: string): Promise<string> {
  const out = await run(
    WRANGLER,
    ['deploy', '--dry-run', '--outdir', outdir, '-c', config],
    BUILD_TIMEOUT_MS,
  );
  if (out.code !== 0)
    throw new Error(`wrangler deploy --dry-run -c ${config} failed (exit ${out.code}):\n${out.output}`);
  const main = (await wranglerSettings(config)).main ?? '';
  return path.join(outdir, `${path.basename(main, path.extname(main))}.js`);
}

export async function startWorkers(options: WorkersOptions): Promise<RunningWorkers> {
  const withBrain = options.brain ?? true;
  if (withBrain && (!options.natsUrl || !options.modelBaseUrl || !options.modelApiKey))
    throw new Error('startWorkers: the brain Worker needs natsUrl, modelBaseUrl and modelApiKey');
  let output = '';
  const dir = await mkdtemp(path.join(tmpdir(), 'leasehold-workers-'));
  const cleanups: Array<() => Promise<unknown>> = [() => rm(dir, { recursive: true, force: true })];
  const close = async () => {
    for (const c of cleanups.reverse()) await c().catch(() => {});
  };
  try {
    const [api, brain] = await Promise.all([
      buildWorker('wrangler.toml', path.join(dir, 'api')),
      withBrain ? buildWorker('wrangler.brain.toml', path.join(dir, 'brain')) : null,
    ]);
    const db = new URL(options.databaseUrl);
    const proxy: WsProxy = await startWsProxy([`${db.hostname}:${db.port || 5432}`]);
    cleanups.push(() => proxy.close());

    // Each Worker's settings as its wrangler config gives them (compatibility, vars, crons).
    const apiConfig = (await wranglerSettings('wrangler.toml')).workerOptions;
    const brainConfig = (await wranglerSettings('wrangler.brain.toml')).workerOptions;
    const shared = {
      DATABASE_URL: options.databaseUrl,
      LEASEHOLD_NEON_WS_PROXY: `127.0.0.1:${proxy.port}`,
      ...(options.natsUrl ? { NATS_URL: options.natsUrl } : {}),
    };
    const keep = (stream: Readable) =>
      stream.on('data', (chunk: Buffer) => {
        output = (output + chunk.toString()).slice(-MAX_OUTPUT);
      });
    const mf = new Miniflare({
      host: '127.0.0.1',
      port: 0,
      // Offline: no `cf` object fetched, nothing reported.
      cf: false,
      telemetry: { enabled: false },
      log: new Log(LogLevel.WARN),
      handleRuntimeStdio: (stdout: Readable, stderr: Readable) => {
        keep(stdout);
        keep(stderr);
      },
      workers: [
        {
          ...apiConfig,
          name: API_WORKER,
          modules: true,
          scriptPath: api,
          modulesRoot: path.dirname(api),
          bindings: {
            ...apiConfig.bindings,
            ...shared,
            LEASEHOLD_ADMIN_KEY: options.adminKey,
            ...options.settings,
          },
          ...(withBrain ? { serviceBindings: { BRAIN: BRAIN_WORKER } } : {}),
        },
        ...(brain
          ? [
              {
                ...brainConfig,
                name: BRAIN_WORKER,
                modules: true,
                scriptPath: brain,
                modulesRoot: path.dirname(brain),
                bindings: {
                  ...brainConfig.bindings,
                  ...shared,
                  LEASEHOLD_MODEL: 'anthropic',
                  LEASEHOLD_MODEL_API_KEY: options.modelApiKey!,
                  LEASEHOLD_MODEL_BASE_URL: options.modelBaseUrl!,
                },
              },
            ]
          : []),
      ],
    });
    cleanups.push(() => mf.dispose());
    const url = await mf.ready;
    return {
      baseURL: url.origin,
      sweep: async () => {
        if (!withBrain) throw new Error('startWorkers: no brain Worker to sweep with');
        const worker = await mf.getWorker(BRAIN_WORKER);
        const result = await worker.scheduled({ cron: '* * * * *' });
        if (result.outcome !== 'ok')
          throw new Error(`the brain Worker's sweep ended ${result.outcome}; workerd's output:\n${output}`);
      },
      output: () => output,
      wsProxy: proxy,
      close,
    };
  } catch (err) {
    await close();
    if (!output) throw err;
    throw new Error(`${(err as Error).message}\nworkerd's output:\n${output}`, { cause: err });
  }
}

function run(cmd: string, args: string[], timeoutMs: number): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd: ROOT,
      // Keep wrangler off the network: no metrics, no fetch of the `cf` object.
      env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 128 : 1), output });
    });
  });
}
