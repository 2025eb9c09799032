/**
 * A private three-node nats-server cluster on loopback: each node with its own name, client and
 * websocket listener, route port and JetStream store, routed to the others — what a journal
 * stream at 3 replicas runs on. For the fault tests (test/faults/nats-cluster.test.ts): a node
 * can be killed (SIGKILL) or stopped (SIGTERM) and started again in place, and the cluster
 * keeps serving on the other two.
 *
 * Client and websocket ports are taken free at the first start (as for one server, see
 * nats-server.ts). Route ports cannot be: every node's config names the others' before any of
 * them runs, so they are picked free up front, and a start that lost one to another process in
 * between is tried again on fresh ones.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  isRunning,
  killChild,
  type NatsServerOptions,
  type NatsServerProcess,
  requireNatsServer,
  type Spawned,
  spawnNatsServer,
  stopChild,
} from './nats-server.js';

/**
 * How long the nodes may take to agree on a JetStream metadata leader once they all run: they
 * do within a second or two, even on a busy machine.
 */
const META_LEADER_TIMEOUT_MS = 8_000;
/**
 * Starts afresh (new ports, new stores) after a route port was taken by another process
 * meanwhile, or after a start whose nodes did not all learn of a leader: three nodes started
 * at once race to route to each other, and once in a while (2.9.10, a loaded machine) one of
 * them never learned the leader the other two elected.
 */
const START_TRIES = 3;
const CLUSTER_NAME = 'leasehold';

/** One node: a server of the cluster (`stop()` is the cluster's, which removes every store). */
export interface NatsClusterNode extends Omit<NatsServerProcess, 'stop'> {
  /** Its server_name: what stream info reports as a leader or replica. */
  readonly name: string;
  /** Whether its process is running. */
  readonly running: boolean;
  /** Its log (stderr) since its last start. */
  log(): string;
}

export interface NatsClusterProcess {
  nodes: NatsClusterNode[];
  /** Every node's `ws://` URL, comma-separated: what NATS_URL is set to. */
  url: string;
  node(name: string): NatsClusterNode;
  /** Ends every node (SIGTERM, then SIGKILL) and removes the stores. */
  stop(): Promise<void>;
}

export interface NatsClusterOptions extends NatsServerOptions {
  /** Nodes in the cluster (default 3). */
  size?: number;
}

/** Starts the cluster and resolves once every node is ready and the nodes elected a metadata leader. */
export async function launchNatsCluster(options: NatsClusterOptions = {}): Promise<NatsClusterProcess> {
  const bin = requireNatsServer(options.binary);
  const size = options.size ?? 3;
  for (let attempt = 1; ; attempt++) {
    const dir = await mkdtemp(path.join(tmpdir(), 'leasehold-nats-cluster-'));
    const routePorts = await freePorts(size);
    const started: Spawned[] = [];
    try {
      const nodes = await Promise.all(
        routePorts.map((_, i) => startNode(bin, dir, i, routePorts, options.extraConfig ?? '', started)),
      );
      await untilMetaLeader(nodes);
      return {
        nodes,
        url: nodes.map((n) => n.wsUrl).join(','),
        node: (name) => {
          const found = nodes.find((n) => n.name === name);
          if (!found)
            throw new Error(`no node named ${name} (nodes: ${nodes.map((n) => n.name).join(', ')})`);
          return found;
        },
        stop: async () => {
          await Promise.all(nodes.map((n) => n.stopProcess()));
          await rm(dir, { recursive: true, force: true });
        },
      };
    } catch (err) {
      await Promise.all(started.map((s) => killChild(s.child)));
      await rm(dir, { recursive: true, force: true });
      const again = err instanceof NoMetaLeaderError || /address already in use/.test(String(err));
      if (attempt >= START_TRIES || !again) throw err;
    }
  }
}

type Node = NatsClusterNode & { stopProcess(): Promise<void> };

async function startNode(
  bin: string,
  dir: string,
  index: number,
  routePorts: number[],
  extraConfig: string,
  started: Spawned[],
): Promise<Node> {
  const name = `n${index + 1}`;
  const config = path.join(dir, `${name}.conf`);
  const storeDir = path.join(dir, name);
  const routes = routePorts.map((p) => `"nats-route://127.0.0.1:${p}"`).join(', ');
  const writeConfig = (port: number | -1, wsPort: number | -1) =>
    writeFile(
      config,
      `server_name: "${name}"\nlisten: "127.0.0.1:${port}"\n` +
        `jetstream { store_dir: "${storeDir}" }\n` +
        `websocket { listen: "127.0.0.1:${wsPort}", no_tls: true }\n` +
        `cluster { name: "${CLUSTER_NAME}", listen: "127.0.0.1:${routePorts[index]}", routes: [${routes}] }\n` +
        `${extraConfig}\n`,
    );
  await writeConfig(-1, -1);
  let server = await spawnNatsServer(bin, config);
  started.push(server);
  const { port, wsPort } = server;
  return {
    name,
    wsUrl: `ws://127.0.0.1:${wsPort}`,
    // Cluster nodes run without the monitoring endpoints: nothing here reads them.
    monitorUrl: null,
    port,
    storeDir,
    get pid() {
      return server.child.pid!;
    },
    get running() {
      return isRunning(server.child);
    },
    log: () => server.log(),
    kill: (signal) => killChild(server.child, signal),
    start: async () => {
      if (isRunning(server.child)) throw new Error(`node ${name} is still running: kill() it before start()`);
      await writeConfig(port, wsPort);
      server = await spawnNatsServer(bin, config);
    },
    stopProcess: () => stopChild(server.child),
  };
}

/**
 * The nodes agree on a metadata leader once each has logged one (the leader logs itself as
 * "Self is new …"): JetStream requests are served from then on.
 */
async function untilMetaLeader(nodes: NatsClusterNode[]): Promise<void> {
  const deadline = Date.now() + META_LEADER_TIMEOUT_MS;
  while (!nodes.every((n) => /new metadata leader|is new JetStream cluster metadata leader/.test(n.log()))) {
    if (Date.now() > deadline) throw new NoMetaLeaderError(nodes);
    await new Promise((r) => setTimeout(r, 50));
  }
}

class NoMetaLeaderError extends Error {
  constructor(nodes: NatsClusterNode[]) {
    super(
      `the cluster's nodes did not all learn of a JetStream metadata leader within ${META_LEADER_TIMEOUT_MS / 1000} s:\n` +
        nodes.map((n) => `--- ${n.name}\n${n.log()}`).join('\n'),
    );
    this.name = 'NoMetaLeaderError';
  }
}

/** `count` distinct loopback ports free right now (held open together, so they differ). */
async function freePorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer());
  try {
    return await Promise.all(
      servers.map(
        (s) =>
          new Promise<number>((resolve, reject) => {
            s.once('error', reject);
            s.listen(0, '127.0.0.1', () => resolve((s.address() as { port: number }).port));
          }),
      ),
    );
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
  }
}
