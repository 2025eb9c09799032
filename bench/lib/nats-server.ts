/**
 * A private nats-server for the journal benchmarks: JetStream in a temp store and a websocket
 * listener on a free loopback port, so a bench run neither touches the machine's own server nor
 * another bench's. Free of vitest (the test helper's twin lives in test/helpers/nats.ts).
 *
 * A missing binary is an error with a message, never a silent skip: a journal figure that was
 * not measured must not look like one that was.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

const CANDIDATES = [
  process.env.NATS_SERVER_BIN,
  '/usr/sbin/nats-server',
  '/usr/bin/nats-server',
  '/usr/local/bin/nats-server',
];
const START_TIMEOUT_MS = 10_000;

export interface BenchNatsServer {
  /** `ws://127.0.0.1:{port}`: what `connectJournal` takes. */
  wsUrl: string;
  /** The client (TCP) port. */
  port: number;
  pid: number;
  /** Stops the server (SIGTERM, then SIGKILL after 3 s) and removes its temp dir. Idempotent. */
  stop(): Promise<void>;
}

export function natsServerBinary(): string {
  const found = CANDIDATES.find((p): p is string => !!p && existsSync(p));
  if (!found) {
    throw new Error(
      'nats-server is not installed (looked in $NATS_SERVER_BIN, /usr/sbin, /usr/bin and /usr/local/bin); ' +
        'the journal benchmarks need a real server: apt-get install nats-server',
    );
  }
  return found;
}

export async function startNatsServer(): Promise<BenchNatsServer> {
  const bin = natsServerBinary();
  const dir = await mkdtemp(path.join(tmpdir(), 'leasehold-bench-nats-'));
  const config = path.join(dir, 'nats.conf');
  await writeFile(
    config,
    [
      'listen: "127.0.0.1:-1"',
      `jetstream { store_dir: "${path.join(dir, 'store')}" }`,
      'websocket { listen: "127.0.0.1:-1", no_tls: true }',
      '',
    ].join('\n'),
  );
  const child = spawn(bin, ['-c', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  // A bench that dies without its teardown must not leave the server behind.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  let ports: { wsPort: number; port: number };
  try {
    ports = await waitReady(child);
  } catch (err) {
    process.removeListener('exit', killOnExit);
    await stopChild(child);
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  let stopped: Promise<void> | null = null;
  return {
    wsUrl: `ws://127.0.0.1:${ports.wsPort}`,
    port: ports.port,
    pid: child.pid!,
    stop: () => {
      stopped ??= (async () => {
        process.removeListener('exit', killOnExit);
        await stopChild(child);
        await rm(dir, { recursive: true, force: true });
      })();
      return stopped;
    },
  };
}

/** Reads the server's log until it reports both listeners and readiness. */
function waitReady(child: ChildProcess): Promise<{ wsPort: number; port: number }> {
  return new Promise((resolve, reject) => {
    let log = '';
    const stderr = child.stderr!;
    const done = (err: Error | null, ports?: { wsPort: number; port: number }) => {
      clearTimeout(timer);
      stderr.removeListener('data', onData);
      child.removeListener('exit', onExit);
      child.removeListener('error', onError);
      // Keep draining the log: a full pipe would block the server.
      stderr.resume();
      if (err) reject(err);
      else resolve(ports!);
    };
    const onData = (chunk: Buffer) => {
      log += chunk.toString();
      const ws = /websocket clients on ws:\/\/127\.0\.0\.1:(\d+)/.exec(log);
      const tcp = /client connections on 127\.0\.0\.1:(\d+)/.exec(log);
      if (ws && tcp && log.includes('Server is ready'))
        done(null, { wsPort: Number(ws[1]), port: Number(tcp[1]) });
    };
    const onExit = (code: number | null) =>
      done(new Error(`nats-server exited with ${code} during start:\n${log}`));
    const onError = (err: Error) => done(new Error(`nats-server could not be started: ${err.message}`));
    const timer = setTimeout(
      () => done(new Error(`nats-server did not start within ${START_TIMEOUT_MS / 1000} s:\n${log}`)),
      START_TIMEOUT_MS,
    );
    stderr.on('data', onData);
    child.once('exit', onExit);
    child.once('error', onError);
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null)
    return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 3_000).unref();
  });
}
