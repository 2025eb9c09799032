/**
 * Which nats-server keeps the fence on a replicated journal stream.
 *
 * The fence is `Nats-Expected-Last-Subject-Sequence`. On a stream of one replica the server
 * checks it under the stream's lock as it stores, so of two writers holding the same sequence
 * exactly one is stored. On a replicated stream, servers before 2.9.21 check it only on the
 * leader, before replicating, against what the leader has applied so far — so a second write
 * arriving before the first is applied passes too, and both are stored (test/faults/
 * nats-cluster.test.ts shows it on 2.9.10). 2.9.21 repeats the check on every replica as it
 * applies; 2.11.0 also holds back such writes while a new leader still has entries to apply
 * and while another write to the subject is in flight, which keeps the replicas from drifting
 * apart on it. So a replicated journal needs 2.11.0 or later.
 *
 * The version read is that of the server the connection is on: in a cluster being upgraded
 * node by node, provision only once every node runs the new version.
 */
import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { JournalError } from './errors.js';
import { JOURNAL_STREAM } from './types.js';

/** The first nats-server release whose replicated streams keep the fence. */
export const REPLICATED_FENCE_MIN_VERSION = '2.11.0';

/** A replicated journal stream on a server that cannot keep its fence. */
export class ReplicatedFenceUnsupportedError extends JournalError {
  constructor(
    readonly serverVersion: string,
    readonly replicas: number,
  ) {
    super(
      `journal: ${JOURNAL_STREAM} at ${replicas} replicas needs nats-server ≥ ${REPLICATED_FENCE_MIN_VERSION}, ` +
        `this is ${serverVersion}: before it a replicated stream checks the expected last subject sequence ` +
        'only on its leader, before replicating, so two writers holding the same sequence can both be stored',
    );
  }
}

/** Whether a stream of `replicas` on nats-server `version` keeps the fence. */
export function fenceHolds(version: string, replicas: number): boolean {
  if (replicas <= 1) return true;
  const have = parseVersion(version);
  return have !== null && compareVersions(have, parseVersion(REPLICATED_FENCE_MIN_VERSION)!) >= 0;
}

/** Throws `ReplicatedFenceUnsupportedError` unless the manager's server keeps the fence at `replicas`. */
export function assertFenceHolds(jsm: JetStreamManager, replicas: number): void {
  if (replicas <= 1) return;
  const version = serverVersion(jsm) ?? 'of unknown version';
  if (!fenceHolds(version, replicas)) throw new ReplicatedFenceUnsupportedError(version, replicas);
}

/**
 * The version in the connected server's INFO. The manager's type does not show its connection;
 * the client's implementation offers it as `getConnection()`.
 */
function serverVersion(jsm: JetStreamManager): string | undefined {
  const nc = (jsm as Partial<{ getConnection(): NatsConnection }>).getConnection?.();
  return nc?.info?.version;
}

/** `major.minor.patch` of a version string (a pre-release counts as its release), null when none. */
export function parseVersion(version: string): [number, number, number] | null {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version.trim());
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

function compareVersions(a: [number, number, number], b: [number, number, number]): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}
