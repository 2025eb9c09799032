/**
 * A private three-node nats-server cluster for a test (functions/nats-cluster.ts starts it), with
 * what the cluster tests need on top: connections closed with the cluster, the journal stream's
 * leader and replicas as the cluster reports them, and waiting until every replica is current.
 */
import { jetstreamManager, type StreamInfo } from '@nats-io/jetstream';
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

/** The journal stream's cluster view: its leader's name and each replica's state. */
export async function streamCluster(nc: NatsConnection): Promise<NonNullable<StreamInfo['cluster']>> {
  const info = await (await jetstreamManager(nc, { checkAPI: false })).streams.info(JOURNAL_STREAM);
  if (!info.cluster) throw new Error(`${JOURNAL_STREAM} reports no cluster: is it replicated?`);
  return info.cluster;
}

/**
 * Waits until the stream has a leader and `replicas` other peers that are current and were seen
 * within the last second, and (when given) a leader other than `notLeader`; returns the leader.
 * Stream info answers only once a leader exists, so a failing request is retried too.
 */
export async function untilStreamSettled(
  nc: NatsConnection,
  opts: { replicas: number; notLeader?: string; timeoutMs?: number },
): Promise<string> {
  // 120 s: a 2.9.10 replica that fell behind while its node was down catches up in seconds on
  // a quiet machine, but took over 20 s on a loaded one, and once over 60 s in a CI run where
  // the soak's load ran beside it.
  const deadline = performance.now() + (opts.timeoutMs ?? 120_000);
  let last: unknown = null;
  for (;;) {
    try {
      const c = await streamCluster(nc);
      const current = (c.replicas ?? []).filter((r) => r.current && !r.offline && r.active < 1_000_000_000);
      last = c;
      if (c.leader && c.leader !== opts.notLeader && current.length >= opts.replicas) return c.leader;
    } catch (err) {
      last = err;
    }
    if (performance.now() > deadline) {
      throw new Error(
        `${JOURNAL_STREAM} did not settle (leader${opts.notLeader ? ` other than ${opts.notLeader}` : ''}, ` +
          `${opts.replicas} current replicas) in time; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
