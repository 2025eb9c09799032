/**
 * The real Node server (`tsx functions/node.ts`) as a child process on a free loopback port,
 * for tests that drive it over HTTP the way a deployment is driven.
 *
 * The server runs under a tiny supervisor (`node -e`) that puts it in its own process group
 * and kills that group when told to, when the server exits, or when the test process goes
 * away without saying so (the supervisor's stdin, a pipe from the test process, closes).
 * `tsx` itself runs the script in a grandchild, so killing only the direct child could
 * orphan the server; killing the group cannot.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');
const ENTRY = path.join(ROOT, 'functions/node.ts');

/** How long the server may take to answer its first request (tsx compiles on start). */
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
const group = (sig) => { try { process.kill(-child.pid, sig); } catch {} };
let ending = false;
const end = () => {
  if (ending) return;
  ending = true;
  group('SIGTERM');
  setTimeout(() => group('SIGKILL'), ${STOP_GRACE_MS}).unref();
};
child.on('error', (err) => { console.error('[supervisor] ' + err.message); process.exit(127); });
child.on('exit', (code, signal) => { group('SIGKILL'); process.exit(code ?? (signal ? 128 : 1)); });
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
  /** The LEASEHOLD_ADMIN_KEY the server was started with. */
  adminKey: string;
  /** Everything the server wrote to stderr and stdout so far (the last 64 KiB). */
  output(): string;
  /** SIGTERM, bounded wait, then the group is killed; idempotent. */
  stop(): Promise<void>;
}

export interface StartOptions {
  databaseUrl: string;
  /** Extra environment for the server. */
  env?: Record<string, string>;
}

/**
 * Starts the server and resolves once it answers HTTP. Fails with the server's output when
 * it exits early or does not answer within the start timeout.
 */
export async function startServer(options: StartOptions): Promise<RunningServer> {
  let lastError: Error | undefined;
  // A port found free can be taken before the server binds it: retry on EADDRINUSE only.
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await startOnce(options, await freePort());
    } catch (err) {
      lastError = err as Error;
      if (!/EADDRINUSE/.test(lastError.message)) throw lastError;
    }
  }
  throw lastError!;
}

async function startOnce(options: StartOptions, port: number): Promise<RunningServer> {
  const adminKey = `lh_test_admin_${randomBytes(24).toString('hex')}`;
  const dataDir = await mkdtemp(path.join(tmpdir(), 'leasehold-server-'));
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    // The server reads only its own settings; keep the test run's NATS/ANTHROPIC settings out.
    if (v !== undefined && !/^(NATS_URL|ANTHROPIC_|LEASEHOLD_|PORT$|HOST$|DATABASE_URL$)/.test(k)) env[k] = v;
  }
  Object.assign(env, {
    DATABASE_URL: options.databaseUrl,
    PORT: String(port),
    HOST: '127.0.0.1',
    LEASEHOLD_ADMIN_KEY: adminKey,
    LEASEHOLD_DATA_DIR: path.join(dataDir, 'data'),
    LEASEHOLD_SUPERVISE_ARGV: JSON.stringify([TSX, ENTRY]),
    ...options.env,
  });

  const child = spawn(process.execPath, ['-e', SUPERVISOR], {
    cwd: ROOT,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-MAX_OUTPUT);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
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
      await rm(dataDir, { recursive: true, force: true });
    })();
    return stopping;
  };

  const baseURL = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (hasExited) {
      const { code, signal } = await exited;
      await stop();
      throw new Error(
        `the Leasehold server exited before it answered (code ${code}, signal ${signal}); its output:\n${output}`,
      );
    }
    if (await answers(baseURL)) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(
        `the Leasehold server did not answer on ${baseURL} within ${START_TIMEOUT_MS} ms; its output:\n${output}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { baseURL, port, adminKey, output: () => output, stop };
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
