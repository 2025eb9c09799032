/**
 * A private nats-server: JetStream in a temp store and a websocket listener on a free loopback
 * port, so journal tests (and the journal benchmarks) can provision, fill and break streams
 * without touching anyone else's. A missing binary fails the run with a message, never a skip.
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
  /** The server process, for tests that freeze it (SIGSTOP) to lose an answer in flight. */
  pid: number;
  /** A websocket connection to this server (closed with the server). */
  connect(): Promise<NatsConnection>;
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
  await writeFile(
    config,
    `listen: "127.0.0.1:-1"\njetstream { store_dir: "${dir}/store" }\nwebsocket { listen: "127.0.0.1:-1", no_tls: true }\n${extraConfig}\n`,
  );
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
  const connections: NatsConnection[] = [];
  const wsUrl = `ws://127.0.0.1:${wsPort}`;
  return {
    wsUrl,
    port,
    storeDir: path.join(dir, 'store'),
    pid: child.pid!,
    connect: async () => {
      const nc = await connectJournal(wsUrl, { webSocket: WebSocket });
      connections.push(nc);
      return nc;
    },
    stop: async () => {
      await Promise.all(connections.map((nc) => nc.close().catch(() => {})));
      await stopChild(child);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
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
