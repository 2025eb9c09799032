/**
 * A private nats-server for a test (functions/nats-server.ts starts it: JetStream in a temp
 * store, a websocket listener on a free loopback port), so journal tests (and the journal
 * benchmarks) can provision, fill and break streams without touching anyone else's — and kill
 * and start again in place (same ports, same store) for the fault tests. This adds what only
 * tests need: connections closed with the server, freezing it, and a missing binary failing
 * the run with a message, never a skip. Free of vitest, so the benchmark suite starts its
 * servers with it too; `nats.ts` adds the per-file hook.
 */
import { readFile } from 'node:fs/promises';
import type { NatsConnection } from '@nats-io/nats-core';
import { WebSocket } from 'ws';
import { findNatsServer, launchNatsServer, type NatsServerProcess } from '../../functions/nats-server.js';
import { connectJournal } from '../../src/journal/connect.js';

export interface NatsServer extends NatsServerProcess {
  /** A websocket connection to this server (closed with the server). */
  connect(): Promise<NatsConnection>;
}

/** The binary; the test command's global setup installs it where it may (`prereqs.ts`). */
export function natsServerBinary(): string {
  const found = findNatsServer();
  if (!found) {
    throw new Error(
      'nats-server is not installed (looked in /usr/sbin, /usr/bin, /usr/local/bin and $NATS_SERVER_BIN). ' +
        'The journal tests need a real server: apt-get install nats-server',
    );
  }
  return found;
}

export async function startNatsServer(
  extraConfig = '',
  options: { monitor?: boolean } = {},
): Promise<NatsServer> {
  const server = await launchNatsServer({ binary: natsServerBinary(), extraConfig, ...options });
  const connections: NatsConnection[] = [];
  return {
    wsUrl: server.wsUrl,
    port: server.port,
    monitorUrl: server.monitorUrl,
    storeDir: server.storeDir,
    get pid() {
      return server.pid;
    },
    connect: async () => {
      const nc = await connectJournal(server.wsUrl, { webSocket: WebSocket });
      connections.push(nc);
      return nc;
    },
    kill: (signal) => server.kill(signal),
    start: () => server.start(),
    stop: async () => {
      await Promise.all(connections.map((nc) => nc.close().catch(() => {})));
      await server.stop();
    },
  };
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
