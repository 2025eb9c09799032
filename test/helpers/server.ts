/**
 * The real Node server (`node scripts/launch.mjs functions/node.ts`, what `npm start` runs) as a
 * child process on a free loopback port, for tests that drive it over HTTP the way a
 * deployment is driven.
 *
 * The server runs under a tiny supervisor (`node -e`) that puts it in its own process group
 * and kills that group when told to, when the server exits, or when the test process goes
 * away without saying so (the supervisor's stdin, a pipe from the test process, closes).
 * Killing the group also ends anything the server started. The supervisor reports the
 * server's pid over IPC, so a test can signal it alone (what a process manager running
 * `npm start` does) and read how it ended. `supervise` runs any other entry the same way (the
 * brain: brain.ts).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { constants as osConstants, tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const TSX = path.join(ROOT, 'node_modules/.bin/tsx');
/** What `npm start` and `npm run brain` run their entry with (bundled on a change, then imported). */
export const LAUNCH = path.join(ROOT, 'scripts/launch.mjs');
export const ENTRY = path.join(ROOT, 'functions/node.ts');

/** How long the server may take to answer its first request (a changed source is bundled first). */
const START_TIMEOUT_MS = 30_000;
/** How long a SIGTERM drain may take before the group is killed outright. */
const STOP_GRACE_MS = 5_000;
/** How much of the server's output is kept for failure messages. */
const MAX_OUTPUT = 64 * 1024;

/** Runs `argv` in its own process group; ends the group on stdin EOF, SIGTERM or the child's exit. */
const SUPERVISOR = `
const { spawn } = require('node:child_process');
const [cmd, ...args] = JSON.parse(process.env.LEASEHOLD_SUPERVISE_ARGV);
const child = spawn(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'], detached: true });
if (child.pid) process.send({ pid: child.pid });
const group = (sig) => { try { process.kill(-child.pid, sig); } catch {} };
let ending = false;
const end = () => {
  if (ending) return;
  ending = true;
  group('SIGTERM');
  setTimeout(() => group('SIGKILL'), ${STOP_GRACE_MS}).unref();
};
child.on('error', (err) => { console.error('[supervisor] ' + err.message); process.exit(127); });
child.on('exit', (code, signal) => {
  group('SIGKILL');
  process.exit(code ?? (signal ? 128 + require('node:os').constants.signals[signal] : 1));
});
process.stdin.on('end', end);
process.stdin.on('close', end);
process.stdin.on('error', end);
process.stdin.resume();
process.on('SIGTERM', end);
process.on('SIGINT', end);
`;

export interface RunningServer {
  /** `http://127.0.0.1:<port>` */
  baseURL: string;
  port: number;
  /**
   * The LEASEHOLD_ADMIN_KEY the server was started with; empty when started without one (the
   * server then keeps its generated key in `.leasehold/admin-key`).
   */
  adminKey: string;
  /** The pid of the server's process (as under `npm start`: one process, the script's). */
  pid: number;
  /** Settles when the server's process has ended: its exit code (128 + n when signal n ended it). */
  exited: Promise<number>;
  /** Everything the server wrote to stderr and stdout so far (the last 64 KiB). */
  output(): string;
  /** SIGTERM, bounded wait, then the group is killed; idempotent. */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** DATABASE_URL; null starts the server without one, on its embedded database. */
  databaseUrl: string | null;
  /** LEASEHOLD_ADMIN_KEY; default a fresh random key, null for none (the server makes one). */
  adminKey?: string | null;
  /**
   * The server's working directory, owned by the caller; LEASEHOLD_DATA_DIR is then left
   * unset, so the embedded database lands in `<cwd>/.leasehold`. Default: the project root,
   * with LEASEHOLD_DATA_DIR in a temporary directory removed on stop().
   */
  cwd?: string;
  /** Extra environment for the server. */
  env?: Record<string, string>;
  /** A fixed port (a replica restarted in place keeps its address); default a free one. */
  port?: number;
}

/**
 * The test run's environment minus every setting the server reads, so only what a test
 * passes reaches it (the run's own NATS/ANTHROPIC/LEASEHOLD settings stay out).
 */
export function serverEnvironment(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(NATS_URL|ANTHROPIC_|LEASEHOLD_|PORT$|HOST$|DATABASE_URL$)/.test(k)) env[k] = v;
  }
  return env;
}

/**
 * Starts the server and resolves once it answers HTTP. Fails with the server's output when
 * it exits early or does not answer within the start timeout.
 */
/**
 * The Node server on the file's test database for the enclosing suite: started in `beforeAll`
 * (after the database's own hook), stopped in `afterAll`. The handle's fields are filled once
 * it has started.
 */
export function useNodeServer(db: { url: string | null }): RunningServer {
  const handle = {} as RunningServer;
  beforeAll(async () => {
    Object.defineProperties(
      handle,
      Object.getOwnPropertyDescriptors(await startServer({ databaseUrl: db.url! })),
    );
  });
  afterAll(async () => {
    await handle.stop?.();
  });
  return handle;
}

export async function startServer(options: StartOptions): Promise<RunningServer> {
  let lastError: Error | undefined;
  // A port found free can be taken before the server binds it: retry on EADDRINUSE only. A
  // fixed port may still be held for a moment by a process that just died: wait, then retry.
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await startOnce(options, options.port ?? (await freePort()));
    } catch (err) {
      lastError = err as Error;
      if (!/EADDRINUSE/.test(lastError.message)) throw lastError;
      if (options.port !== undefined) await new Promise((r) => setTimeout(r, 500));
    }
  }
  throw lastError!;
}

async function startOnce(options: StartOptions, port: number): Promise<RunningServer> {
  const adminKey =
    options.adminKey === undefined ? `lh_test_admin_${randomBytes(24).toString('hex')}` : options.adminKey;
  const dataDir = options.cwd ? null : await mkdtemp(path.join(tmpdir(), 'leasehold-server-'));
  const env = serverEnvironment();
  Object.assign(env, { PORT: String(port), HOST: '127.0.0.1' });
  if (options.databaseUrl !== null) env.DATABASE_URL = options.databaseUrl;
  if (adminKey !== null) env.LEASEHOLD_ADMIN_KEY = adminKey;
  if (dataDir) env.LEASEHOLD_DATA_DIR = path.join(dataDir, 'data');
  Object.assign(env, options.env);

  const proc = supervise([process.execPath, LAUNCH, ENTRY], { cwd: options.cwd ?? ROOT, env });
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      await proc.stop();
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    })();
    return stopping;
  };

  const baseURL = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (proc.hasExited()) {
      const code = await proc.exited;
      await stop();
      throw new Error(
        `the Leasehold server exited before it answered (exit code ${code}); its output:\n${proc.output()}`,
      );
    }
    if (await answers(baseURL)) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(
        `the Leasehold server did not answer on ${baseURL} within ${START_TIMEOUT_MS} ms; its output:\n${proc.output()}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const topPid = await proc.pid;
  proc.disconnect();
  return {
    baseURL,
    port,
    adminKey: adminKey ?? '',
    pid: topPid,
    exited: proc.exited,
    output: proc.output,
    stop,
  };
}

/** A process under the supervisor: its pid, its output, how it ended, and a bounded stop. */
export interface Supervised {
  /** The pid of the top process, reported by the supervisor. */
  pid: Promise<number>;
  /** Settles when the top process has ended: its exit code (128 + n when signal n ended it). */
  exited: Promise<number>;
  hasExited(): boolean;
  /** Everything it wrote to stderr and stdout so far (the last 64 KiB). */
  output(): string;
  /** SIGTERM to the group, bounded wait, then SIGKILL; idempotent. */
  stop(): Promise<void>;
  /** Drops the IPC channel (it would keep this process alive past the tests); call after `pid`. */
  disconnect(): void;
}

/** Runs `argv` under the supervisor (see the top of this file) in `cwd` with exactly `env`. */
export function supervise(argv: string[], options: { cwd: string; env: Record<string, string> }): Supervised {
  const child = spawn(process.execPath, ['-e', SUPERVISOR], {
    cwd: options.cwd,
    env: { ...options.env, LEASEHOLD_SUPERVISE_ARGV: JSON.stringify(argv) },
    stdio: ['pipe', 'pipe', 'pipe', 'ipc'],
  });
  const pid = new Promise<number>((resolve) =>
    child.once('message', (m) => resolve((m as { pid: number }).pid)),
  );
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-MAX_OUTPUT);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  // The supervisor mirrors the top process's exit code; its own death by a signal reads 128 + n.
  const exitCode = exited.then(
    ({ code, signal }) => code ?? 128 + (signal ? osConstants.signals[signal] : 0),
  );
  let hasExited = false;
  void exited.then(() => {
    hasExited = true;
  });
  // If this process ends without stop(), the supervisor sees its stdin close; say it at exit too.
  const onExit = () => child.kill('SIGTERM');
  process.once('exit', onExit);

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      process.removeListener('exit', onExit);
      if (!hasExited) {
        child.stdin!.end();
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS + 2_000);
        await exited;
        clearTimeout(timer);
      }
    })();
    return stopping;
  };
  return {
    pid,
    exited: exitCode,
    hasExited: () => hasExited,
    output: () => output,
    stop,
    disconnect: () => child.disconnect(),
  };
}

/** True once the Leasehold app answers at the base URL (any status; its `request-id` says it is ours). */
async function answers(baseURL: string): Promise<boolean> {
  try {
    const res = await fetch(`${baseURL}/`, { signal: AbortSignal.timeout(1_000) });
    await res.body?.cancel();
    return res.headers.get('request-id')?.startsWith('req_') ?? false;
  } catch {
    return false;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}
