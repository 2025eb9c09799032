/**
 * A private nats-server: JetStream in a temporary store and a websocket listener, both on free
 * loopback ports, for a journal that nobody else shares. `npm run example:session` runs its
 * journal on one; the tests and the benchmarks start theirs with it too
 * (test/helpers/nats-server.ts adds what only tests need). A server can be killed and started
 * again in place — same ports, same store — and `stop()` removes the store.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** How long a start may take before it is given up. */
const START_TIMEOUT_MS = 10_000;
/** How long a SIGTERM may take before the process is killed outright. */
const STOP_GRACE_MS = 3_000;

/** Where nats-server may be: $NATS_SERVER_BIN first, then where packages put it. */
export function findNatsServer(): string | undefined {
  const candidates = [
    process.env.NATS_SERVER_BIN,
    '/usr/sbin/nats-server',
    '/usr/bin/nats-server',
    '/usr/local/bin/nats-server',
  ];
  return candidates.find((p): p is string => !!p && existsSync(p));
}

export interface NatsServerProcess {
  /** `ws://127.0.0.1:<port>`: what NATS_URL is set to. */
  wsUrl: string;
  /** Client (TCP) port. */
  port: number;
  /** `http://127.0.0.1:<port>` of the monitoring endpoints (`/varz`, `/connz`), when asked for. */
  monitorUrl: string | null;
  storeDir: string;
  /** The current server process (it changes with `start()`). */
  readonly pid: number;
  /**
   * Ends the server process with `signal` (default SIGKILL: no shutdown of its own) and waits
   * for it to exit; its store and ports are kept for `start()`. A no-op when it is not running.
   */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /**
   * Starts the server again in place — same client and websocket ports, same store — and
   * resolves once it is ready. Clients reconnect to it by themselves.
   */
  start(): Promise<void>;
  /** Ends the server (SIGTERM, then SIGKILL after 3 s) and removes its store. */
  stop(): Promise<void>;
}

export interface NatsServerOptions {
  /** The nats-server binary; default `findNatsServer()`. */
  binary?: string;
  /** Lines appended to the server's configuration file. */
  extraConfig?: string;
  /** Serve the monitoring endpoints on a free loopback port (tests count connections there). */
  monitor?: boolean;
}

/** Starts a private nats-server and resolves once it says it is ready. */
export async function launchNatsServer(options: NatsServerOptions = {}): Promise<NatsServerProcess> {
  const bin = requireNatsServer(options.binary);
  const dir = await mkdtemp(path.join(tmpdir(), 'leasehold-nats-'));
  const config = path.join(dir, 'nats.conf');
  const writeConfig = (port: number | -1, wsPort: number | -1, httpPort: number | -1) =>
    writeFile(
      config,
      `listen: "127.0.0.1:${port}"\njetstream { store_dir: "${dir}/store" }\nwebsocket { listen: "127.0.0.1:${wsPort}", no_tls: true }\n${options.monitor ? `http: "127.0.0.1:${httpPort}"\n` : ''}${options.extraConfig ?? ''}\n`,
    );
  // The first start takes free ports; a restart in place pins the ones it got.
  await writeConfig(-1, -1, -1);
  let server: Spawned;
  try {
    server = await spawnNatsServer(bin, config);
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  const { port, wsPort, httpPort } = server;
  return {
    wsUrl: `ws://127.0.0.1:${wsPort}`,
    port,
    monitorUrl: httpPort ? `http://127.0.0.1:${httpPort}` : null,
    storeDir: path.join(dir, 'store'),
    get pid() {
      return server.child.pid!;
    },
    kill: (signal) => killChild(server.child, signal),
    start: async () => {
      if (isRunning(server.child)) throw new Error('nats-server is still running: kill() it before start()');
      await writeConfig(port, wsPort, httpPort ?? -1);
      server = await spawnNatsServer(bin, config);
    },
    stop: async () => {
      await stopChild(server.child);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The binary to run: `binary`, else `findNatsServer()`; none is an error naming what to install. */
export function requireNatsServer(binary?: string): string {
  const bin = binary ?? findNatsServer();
  if (!bin) {
    throw new Error(
      'nats-server is not installed (looked in $NATS_SERVER_BIN, /usr/sbin, /usr/bin, /usr/local/bin): ' +
        'install it (Debian: apt-get install nats-server) or set NATS_SERVER_BIN=/path/to/nats-server',
    );
  }
  return bin;
}

export interface Spawned {
  child: ChildProcess;
  port: number;
  wsPort: number;
  /** The monitoring port, when the config asks for one. */
  httpPort: number | null;
  /** Everything the process has written to stderr so far (its log). */
  log(): string;
}

/** Spawns nats-server on `config` and resolves with its ports once it says it is ready. */
export async function spawnNatsServer(bin: string, config: string): Promise<Spawned> {
  const child = spawn(bin, ['-c', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  // The whole log is kept (a server logs little at its default level): a cluster test reads it.
  let log = '';
  const { wsPort, port, httpPort } = await new Promise<Omit<Spawned, 'child' | 'log'>>((resolve, reject) => {
    let wsPort = 0;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`nats-server did not start within ${START_TIMEOUT_MS / 1000} s:\n${log}`));
    }, START_TIMEOUT_MS);
    child.stderr!.on('data', (chunk: Buffer) => {
      log += chunk.toString();
      const ws = /websocket clients on ws:\/\/127\.0\.0\.1:(\d+)/.exec(log);
      if (ws) wsPort = Number(ws[1]);
      const tcp = /client connections on 127\.0\.0\.1:(\d+)/.exec(log);
      if (wsPort && tcp && log.includes('Server is ready')) {
        clearTimeout(timer);
        const http = /http monitor on 127\.0\.0\.1:(\d+)/.exec(log);
        resolve({ wsPort, port: Number(tcp[1]), httpPort: http ? Number(http[1]) : null });
      }
    });
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`nats-server could not be started (${bin}): ${err.message}`));
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`nats-server exited with ${code} during start:\n${log}`));
    });
  });
  return { child, port, wsPort, httpPort, log: () => log };
}

export function isRunning(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Sends `signal` (default SIGKILL) and waits for the exit; a no-op when it is not running. */
export async function killChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (!isRunning(child)) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  await exited;
}

/** SIGTERM, then SIGKILL after the grace period. */
export function stopChild(child: ChildProcess): Promise<void> {
  if (!isRunning(child)) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS).unref();
  });
}
