/**
 * A private nats-server: JetStream in a temp store and a websocket listener on a free loopback
 * port, so journal tests (and the journal benchmarks) can provision, fill and break streams
 * without touching anyone else's — and kill and start again in place (same ports, same store)
 * for the fault tests. A missing binary fails the run with a message, never a skip.
 * Free of vitest, so the benchmark suite starts its servers with it too; `nats.ts` adds the
 * per-file hook.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { NatsConnection } from '@nats-io/nats-core';
import { WebSocket } from 'ws';
import { connectJournal } from '../../src/journal/connect.js';

const CANDIDATES = [
  process.env.NATS_SERVER_BIN,
  '/usr/sbin/nats-server',
  '/usr/bin/nats-server',
  '/usr/local/bin/nats-server',
];

export interface NatsServer {
  wsUrl: string;
  /** Client (TCP) port, for tests of the other transport. */
  port: number;
  storeDir: string;
  /** The current server process, for tests that freeze it (SIGSTOP) to lose an answer in flight. */
  readonly pid: number;
  /** A websocket connection to this server (closed with the server). */
  connect(): Promise<NatsConnection>;
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
  stop(): Promise<void>;
}

export function natsServerBinary(): string {
  const found = CANDIDATES.find((p): p is string => !!p && existsSync(p));
  if (!found) {
    throw new Error(
      'nats-server is not installed (looked in /usr/sbin, /usr/bin, /usr/local/bin and $NATS_SERVER_BIN). ' +
        'The journal tests need a real server: apt-get install nats-server',
    );
  }
  return found;
}

export async function startNatsServer(extraConfig = ''): Promise<NatsServer> {
  const bin = natsServerBinary();
  const dir = await mkdtemp(path.join(tmpdir(), 'leasehold-nats-'));
  const config = path.join(dir, 'nats.conf');
  const writeConfig = (port: number | -1, wsPort: number | -1) =>
    writeFile(
      config,
      `listen: "127.0.0.1:${port}"\njetstream { store_dir: "${dir}/store" }\nwebsocket { listen: "127.0.0.1:${wsPort}", no_tls: true }\n${extraConfig}\n`,
    );
  // The first start takes free ports; a restart in place pins the ones it got.
  await writeConfig(-1, -1);
  let server = await spawnServer(bin, config);
  const connections: NatsConnection[] = [];
  const wsUrl = `ws://127.0.0.1:${server.wsPort}`;
  const { port, wsPort } = server;
  return {
    wsUrl,
    port,
    storeDir: path.join(dir, 'store'),
    get pid() {
      return server.child.pid!;
    },
    connect: async () => {
      const nc = await connectJournal(wsUrl, { webSocket: WebSocket });
      connections.push(nc);
      return nc;
    },
    kill: async (signal = 'SIGKILL') => {
      const { child } = server;
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill(signal);
      await exited;
    },
    start: async () => {
      if (server.child.exitCode === null && server.child.signalCode === null) {
        throw new Error('nats-server is still running: kill() it before start()');
      }
      await writeConfig(port, wsPort);
      server = await spawnServer(bin, config);
    },
    stop: async () => {
      await Promise.all(connections.map((nc) => nc.close().catch(() => {})));
      await stopChild(server.child);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Spawns nats-server on `config` and resolves with its ports once it says it is ready. */
async function spawnServer(
  bin: string,
  config: string,
): Promise<{ child: ChildProcess; port: number; wsPort: number }> {
  const child = spawn(bin, ['-c', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  const { wsPort, port } = await new Promise<{ wsPort: number; port: number }>((resolve, reject) => {
    let log = '';
    let wsPort = 0;
    const timer = setTimeout(
      () => reject(new Error(`nats-server did not start within 10 s:\n${log}`)),
      10_000,
    );
    child.stderr!.on('data', (chunk: Buffer) => {
      log += chunk.toString();
      const ws = /websocket clients on ws:\/\/127\.0\.0\.1:(\d+)/.exec(log);
      if (ws) wsPort = Number(ws[1]);
      const tcp = /client connections on 127\.0\.0\.1:(\d+)/.exec(log);
      if (wsPort && tcp && log.includes('Server is ready')) {
        clearTimeout(timer);
        resolve({ wsPort, port: Number(tcp[1]) });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`nats-server exited with ${code} during start:\n${log}`));
    });
  });
  return { child, port, wsPort };
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 3_000).unref();
  });
}

/**
 * Freezes a server with SIGSTOP and returns once the kernel reports it stopped: the signal is
 * asynchronous, and a publish sent before the process actually stops would still be answered.
 */
export async function freezeServer(pid: number): Promise<void> {
  process.kill(pid, 'SIGSTOP');
  for (let i = 0; i < 200; i++) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // The state is the field after the parenthesised command name.
    if (/\)\s+T\s/.test(stat)) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`nats-server ${pid} did not stop within 1 s of SIGSTOP`);
}
