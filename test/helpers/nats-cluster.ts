/**
 * A private three-node nats-server cluster for a test (functions/nats-cluster.ts starts it), with
 * what the cluster tests need on top: connections closed with the cluster, the journal stream's
 * leader and replicas as the cluster reports them, and waiting until every replica is current.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { WebSocket } from 'ws';
import { launchNatsCluster, type NatsClusterNode } from '../../functions/nats-cluster.js';
import { connectJournal } from '../../src/journal/connect.js';
import { JOURNAL_STREAM } from '../../src/journal/types.js';
import { natsServerBinary } from './nats-server.js';

export interface NatsCluster {
  nodes: NatsClusterNode[];
  /** Every node's ws:// URL, comma-separated. */
  url: string;
  node(name: string): NatsClusterNode;
  /** A connection to the cluster (every node listed), or to the one node given; closed with the cluster. */
  connect(only?: NatsClusterNode): Promise<NatsConnection>;
  stop(): Promise<void>;
}

export async function startNatsCluster(): Promise<NatsCluster> {
  const cluster = await launchNatsCluster({ binary: natsServerBinary() });
  const connections: NatsConnection[] = [];
  return {
    nodes: cluster.nodes,
    url: cluster.url,
    node: (name) => cluster.node(name),
    connect: async (only) => {
      const nc = await connectJournal(only ? only.wsUrl : cluster.url, { webSocket: WebSocket });
      connections.push(nc);
      return nc;
    },
    stop: async () => {
      await Promise.all(connections.map((nc) => nc.close().catch(() => {})));
      await cluster.stop();
    },
  };
}

/** How long a stream may stay unsettled before its leader is asked to step down. */
const STALL_MS = 40_000;

/** What untilStreamSettled waits for. */
export interface SettleOptions {
  /** Other peers that must be current. */
  replicas: number;
  /** What the wait follows (a stream created, a node restarted), for the error message. */
  after: string;
  /** A leader other than this one. */
  notLeader?: string;
  timeoutMs?: number;
  /** Called on each leader step-down asked for because the stream stalled (see below). */
  onStepDown?: (view: string) => void;
}

/**
 * Waits until the stream has a leader and `replicas` other peers that are current and were seen
 * within the last second, and (when given) a leader other than `notLeader`; returns the leader.
 * Stream info answers only once a leader exists, so a failing request is retried too.
 *
 * A stream still unsettled after STALL_MS is asked to step its leader down, as an operator would,
 * and again each STALL_MS after: once in a CI run a 2.9.10 stream sat for 120 s with a leader
 * and no replica in its view. A step-down is one more leader change, which the writers already
 * survive; `onStepDown` hears of each, so a test can report them.
 */
export async function untilStreamSettled(nc: NatsConnection, opts: SettleOptions): Promise<string> {
  // 120 s: a 2.9.10 replica that fell behind while its node was down catches up in seconds on
  // a quiet machine, but took over 20 s on a loaded one, and once over 60 s in a CI run where
  // the soak's load ran beside it.
  const started = performance.now();
  const deadline = started + (opts.timeoutMs ?? 120_000);
  let nextStepDown = started + STALL_MS;
  let last = 'no answer yet';
  for (;;) {
    try {
      const info = await (await jetstreamManager(nc, { checkAPI: false })).streams.info(JOURNAL_STREAM);
      const c = info.cluster;
      const current = (c?.replicas ?? []).filter((r) => r.current && !r.offline && r.active < 1_000_000_000);
      last = JSON.stringify({ ...c, num_replicas: info.config.num_replicas, created: info.created });
      if (c?.leader && c.leader !== opts.notLeader && current.length >= opts.replicas) return c.leader;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    const now = performance.now();
    if (now > deadline) {
      throw new Error(
        `${JOURNAL_STREAM} did not settle after ${opts.after} (leader${opts.notLeader ? ` other than ${opts.notLeader}` : ''}, ` +
          `${opts.replicas} current replicas) in ${((now - started) / 1000).toFixed(0)} s; last: ${last}`,
      );
    }
    if (now > nextStepDown) {
      nextStepDown = now + STALL_MS;
      opts.onStepDown?.(last);
      // Answered by the stream leader only; one that does not answer leaves the wait to go on.
      await nc
        .request(`$JS.API.STREAM.LEADER.STEPDOWN.${JOURNAL_STREAM}`, '', { timeout: 5_000 })
        .catch(() => {});
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
