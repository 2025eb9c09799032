/**
 * The journal on a three-node nats-server cluster (functions/nats-cluster.ts: loopback, a store
 * per node, websocket on each) with AGENT_JOURNAL at 3 replicas, on the installed nats-server.
 *
 * What the fence does there, measured rather than assumed:
 * - two writers holding the same expected sequence at the same moment: a single replica stores
 *   one and refuses the other; 3 replicas on nats-server before 2.9.21 store both, because the
 *   leader checks the expected last subject sequence against what it has applied, before it
 *   replicates, and no replica checks it again as it applies. Whichever lands second was
 *   written on a tail that had moved, and check() reports the broken chain.
 * - one writer before a stream-leader change and one after, holding the same sequence: the new
 *   leader refuses the stale one. (It had applied the first write: the old leader sends the
 *   commit to its followers before it acknowledges. A follower that missed that commit could
 *   take over without having applied it, and nothing would check again — loopback cannot
 *   drop that one message, so this test does not claim the fence holds then.)
 * Since the fence can break, provisioning refuses 3 replicas on this server (server-version.ts),
 * and the last test shows it. The fault test creates the stream by hand to measure what a
 * replicated journal does under faults anyway: appends go on while the stream leader is
 * SIGKILLed and while a node is stopped, no acknowledged append is lost, every failure is a
 * typed journal error within a stated bound, and check() finds every journal whole — but for a
 * resend that a new stream leader, not yet having applied its first copy, stored a second time
 * (the same break; seen once in many CI runs): the test counts those, and reports them.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { type JetStreamClient, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { check } from '../../src/journal/check.js';
import { FencedError, JournalError, JournalUnavailableError } from '../../src/journal/errors.js';
import { Journal } from '../../src/journal/journal.js';
import { claimBody } from '../../src/journal/open.js';
import {
  OutcomeUnknownError,
  PUBLISH_TIMEOUT_MS,
  PUBLISH_TRIES,
  publishRecord,
  STREAM_PROBE_MS,
  WrongLastSequenceError,
} from '../../src/journal/publish.js';
import { READ_STALL_MS, read } from '../../src/journal/read.js';
import {
  fenceHolds,
  parseVersion,
  REPLICATED_FENCE_MIN_VERSION,
  ReplicatedFenceUnsupportedError,
} from '../../src/journal/server-version.js';
import { ensureJournalStream, journalStreamConfig } from '../../src/journal/stream.js';
import { JOURNAL_STREAM, type Task } from '../../src/journal/types.js';
import { atScale, recordFault } from '../helpers/faults.js';
import { STEP, taskOf, untilJournalWorks } from '../helpers/journal.js';
import { type NatsCluster, startNatsCluster, untilStreamSettled } from '../helpers/nats-cluster.js';

/** Races of two writers holding one sequence, per replica count. */
const RACES = atScale(20, 100);
/** Stream-leader changes with a stale writer waiting on each. */
const LEADER_CHANGES = atScale(1, 5);
/** Writers appending through the faults, and fault rounds (a leader SIGKILL, then a node stop). */
const WRITERS = atScale(4, 8);
const ROUNDS = atScale(1, 3);
/** Entries per iteration before its commit. */
const ENTRIES = 5;
/** The JetStream API's own timeout: a request nobody answers (no leader yet) fails after it. */
const API_TIMEOUT_MS = 5_000;
/** A write's three identical publishes time out (2 s each), or one found no leader and the probe gave up. */
const PUBLISH_FAIL_BOUND_MS = PUBLISH_TRIES * PUBLISH_TIMEOUT_MS + STREAM_PROBE_MS;
/** A read: the tail (one request), then a consumer (one request) and its records, each within READ_STALL_MS. */
const READ_FAIL_BOUND_MS = 2 * API_TIMEOUT_MS + READ_STALL_MS;
/** A failed append or commit returns within this: its publishes, and after a 10071 one re-read. */
const APPEND_FAIL_BOUND_MS = PUBLISH_FAIL_BOUND_MS + READ_FAIL_BOUND_MS;
/** A failed Journal.open returns within this: its read, then its claim's publishes. */
const OPEN_FAIL_BOUND_MS = READ_FAIL_BOUND_MS + PUBLISH_FAIL_BOUND_MS;
/**
 * Every writer appends again within this of a fault. nats-server 2.9.10 elects a stream leader
 * 4–9 s after losing one, and a metadata leader (which reads need: they make a consumer) as long
 * again when the killed node was that too; a writer's read sent meanwhile waits out its 5 s.
 */
const RESUME_BOUND_MS = 60_000;

let cluster: NatsCluster;
let admin: NatsConnection;
let serverVersion: string;
/** This test's stream leader step-downs, asked for because the stream stalled: the view before each. */
const stepDowns: string[] = [];

/** Waits for the stream to settle at `replicas` others, after `after`; see untilStreamSettled. */
const settle = (after: string, replicas = 2) =>
  untilStreamSettled(admin, { replicas, after, onStepDown: (view) => stepDowns.push(view) });

/** For a test's record: its step-downs, if any. */
const stepDownNote = () =>
  stepDowns.length > 0
    ? `; the stream stalled ${stepDowns.length}× and its leader was asked to step down (views: ${stepDowns.join(' | ')})`
    : '';

beforeAll(async () => {
  cluster = await startNatsCluster();
  admin = await cluster.connect();
  serverVersion = admin.info!.version;
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

beforeEach(() => {
  stepDowns.length = 0;
});

/** AGENT_JOURNAL afresh at `replicas`, made by hand: provisioning refuses 3 here (see the last test). */
async function recreateStream(replicas: number): Promise<void> {
  const jsm = await jetstreamManager(admin);
  await jsm.streams.delete(JOURNAL_STREAM).catch(() => {});
  await jsm.streams.add(journalStreamConfig({ replicas }));
  if (replicas > 1) await settle(`${JOURNAL_STREAM} created at ${replicas} replicas`, replicas - 1);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether this nats-server checks the expected last subject sequence on every replica as it applies (2.9.21 on). */
function checksOnApply(version: string): boolean {
  const [major, minor, patch] = parseVersion(version) ?? [0, 0, 0];
  return major > 2 || (major === 2 && (minor > 9 || (minor === 9 && patch >= 21)));
}

/** `op` retried while the cluster is still settling after a fault (JournalUnavailableError). */
async function settled<T>(op: () => Promise<T>): Promise<T> {
  let result!: T;
  await untilJournalWorks(async () => {
    result = await op();
  }, RESUME_BOUND_MS);
  return result;
}

describe('the fence on a 3-node nats-server cluster', () => {
  it('two writers holding the same expected sequence at once: 1 replica refuses one; 3 replicas on nats-server < 2.9.21 store both, and check() reports the broken chain', async (ctx) => {
    const nc = await cluster.connect();
    const js = jetstream(nc);
    const outcomes: Record<number, { both: number; one: number; flagged: number; claimFirst: number }> = {};
    for (const replicas of [1, 3]) {
      await recreateStream(replicas);
      const tally = { both: 0, one: 0, flagged: 0, claimFirst: 0 };
      for (let i = 0; i < RACES; i++) {
        const run = `race${replicas}x${i}`;
        // The holder claimed; its lease lapsed, and a successor read the same tail.
        const holder = await Journal.open(js, taskOf(run), { restartLimit: Number.POSITIVE_INFINITY });
        const successor = taskOf(run, { delivered: 2 });
        // Exactly what Journal.open sends after its read, sent in the same tick as the holder's append.
        const [late, claim] = await Promise.allSettled([
          holder.append('entry', { late: true }),
          publishRecord(js, successor, 'claim', claimBody(successor), 0, holder.seq()),
        ]);
        if (late.status === 'fulfilled' && claim.status === 'fulfilled') {
          tally.both += 1;
          // Whichever landed second was written on a tail that had moved: after the claim, the
          // holder wrote past its successor; before it, the successor claimed without seeing the
          // holder's record (an unsafe tool's intent, say). The chain shows it either way.
          if (claim.value.seq < late.value) tally.claimFirst += 1;
          const report = await check(nc, run);
          const violations = report.steps.flatMap((s) => s.violations);
          if (violations.some((v) => v.startsWith('chain:'))) tally.flagged += 1;
        } else {
          tally.one += 1;
          // The loser was refused by the fence, nothing else.
          const refused = late.status === 'rejected' ? late.reason : (claim as PromiseRejectedResult).reason;
          expect(refused).toSatisfy((e) => e instanceof FencedError || e instanceof WrongLastSequenceError);
          expect((await check(nc, run)).ok()).toBe(true);
        }
      }
      outcomes[replicas] = tally;
    }
    // One replica: the fence holds in every race.
    expect(outcomes[1]).toEqual({ both: 0, one: RACES, flagged: 0, claimFirst: 0 });
    // Three replicas: from 2.9.21 on every replica checks again as it applies, and one is refused.
    if (checksOnApply(serverVersion)) {
      expect(outcomes[3]!.both).toBe(0);
    } else {
      expect(outcomes[3]!.both, `nats-server ${serverVersion} kept the fence at 3 replicas`).toBeGreaterThan(
        0,
      );
      expect(outcomes[3]!.flagged).toBe(outcomes[3]!.both);
    }
    recordFault(ctx, {
      load: `${RACES} races per replica count: a holder's append and a successor's claim, same expected sequence, sent in one tick`,
      faults: `none: a lapsed holder racing its successor, on nats-server ${serverVersion}`,
      result:
        `1 replica: ${outcomes[1]!.both}/${RACES} both stored, the other refused by the fence; ` +
        `3 replicas: ${outcomes[3]!.both}/${RACES} both stored (${outcomes[3]!.claimFirst} with the holder's write after ` +
        `the successor's claim, ${outcomes[3]!.both - outcomes[3]!.claimFirst} with the claim blind to the holder's write), ` +
        `check() reported a chain violation in ${outcomes[3]!.flagged} of them${stepDownNote()}`,
    });
  });

  it('one writer before a stream-leader change, one after, holding the same expected sequence: the new leader refuses the stale one', async (ctx) => {
    await recreateStream(3);
    const nc = await cluster.connect();
    const js = jetstream(nc);
    const trials: Array<{ killed: string; leader: string; answeredMs: number; refused: boolean }> = [];
    /** The successor's publishes while no leader answered: each typed, each timed. */
    const waits: Array<{ error: unknown; ms: number }> = [];
    for (let i = 0; i < LEADER_CHANGES; i++) {
      const leader = await settle(i === 0 ? 'the stream created' : `leader change ${i}`);
      const run = `change${i}`;
      const holder = await Journal.open(js, taskOf(run), { restartLimit: Number.POSITIVE_INFINITY });
      const held = holder.seq();
      // Before the change: the holder's append is acknowledged…
      await holder.append('entry', { before: true });
      // …and the leader that acknowledged it dies at once.
      const killedAt = performance.now();
      await cluster.node(leader).kill('SIGKILL');
      // After it: a successor that read the tail before the append claims on that old tail,
      // retrying until some leader answers.
      const successor = taskOf(run, { delivered: 2 });
      let refused: boolean | null = null;
      while (refused === null) {
        const sent = performance.now();
        try {
          await publishRecord(js, successor, 'claim', claimBody(successor), 0, held);
          refused = false;
        } catch (err) {
          if (err instanceof WrongLastSequenceError) refused = true;
          else if (!(err instanceof JournalUnavailableError)) throw err;
          else if (performance.now() - killedAt > RESUME_BOUND_MS) throw err;
          else {
            waits.push({ error: err, ms: performance.now() - sent });
            await sleep(10);
          }
        }
      }
      const answeredMs = performance.now() - killedAt;
      await cluster.node(leader).start();
      const next = await settle(`${leader} SIGKILLed and started again`);
      trials.push({ killed: leader, leader: next, answeredMs, refused });
      // Reading makes a consumer, which waits for a metadata leader too (the killed node may have been it).
      const records = await settled(() => read(js, run, STEP));
      expect(records.map((r) => r.type)).toEqual(refused ? ['claim', 'entry'] : ['claim', 'entry', 'claim']);
      expect((await settled(() => check(nc, run))).ok()).toBe(refused);
    }
    expect(trials.map((t) => t.refused)).toEqual(trials.map(() => true));
    // While no leader answered, each publish failed as "not now", never as a missing stream.
    for (const w of waits) expect(w.error).toBeInstanceOf(JournalUnavailableError);
    const slowest = Math.max(...trials.map((t) => t.answeredMs));
    const noLeader = waits.filter((w) => !(w.error instanceof OutcomeUnknownError));
    recordFault(ctx, {
      load: `${LEADER_CHANGES} leader changes, 3 replicas; a holder's append acknowledged, then a successor's claim on the tail before it`,
      faults: `the stream leader SIGKILLed right after acknowledging, on nats-server ${serverVersion}`,
      result:
        `${trials.filter((t) => t.refused).length}/${trials.length} stale claims refused (10071) by the new leader; ` +
        `first answer ${(Math.min(...trials.map((t) => t.answeredMs)) / 1000).toFixed(1)}–${(slowest / 1000).toFixed(1)} s after the kill; ` +
        `meanwhile ${waits.length} publishes failed, all JournalUnavailableError (${noLeader.length} "no leader took the write", ` +
        `${waits.length - noLeader.length} unanswered), slowest ${(Math.max(0, ...waits.map((w) => w.ms)) / 1000).toFixed(1)} s` +
        stepDownNote(),
    });
  });

  it(`provisioning refuses 3 replicas on a server older than ${REPLICATED_FENCE_MIN_VERSION}, in one line saying why; 1 replica is provisioned`, async (ctx) => {
    const jsm = await jetstreamManager(admin);
    await jsm.streams.delete(JOURNAL_STREAM).catch(() => {});
    if (fenceHolds(serverVersion, 3)) {
      expect(await ensureJournalStream(jsm, { replicas: 3 })).toEqual({ created: true });
      return;
    }
    // Asked for 3: refused, and nothing is created.
    const refusal = await ensureJournalStream(jsm, { replicas: 3 }).catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(ReplicatedFenceUnsupportedError);
    expect(refusal).toMatchObject({ serverVersion, replicas: 3 });
    await expect(jsm.streams.info(JOURNAL_STREAM)).rejects.toMatchObject({ code: 10059 });

    // The deploy step says so in one line and fails.
    const provision = spawnSync(
      process.execPath,
      ['--import', 'tsx', path.resolve(import.meta.dirname, '../../functions/provision-journal.ts')],
      {
        env: { ...process.env, NATS_URL: cluster.url, LEASEHOLD_JOURNAL_REPLICAS: '3' },
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    expect(provision.status).toBe(1);
    const lines = provision.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^journal:provision failed: .*needs nats-server ≥ ${REPLICATED_FENCE_MIN_VERSION}, this is ${serverVersion}: .+`,
      ),
    );

    // A replicated stream made by hand is refused at start-up, whatever was asked for.
    await jsm.streams.add(journalStreamConfig({ replicas: 3 }));
    await expect(ensureJournalStream(jsm)).rejects.toThrow(ReplicatedFenceUnsupportedError);
    await jsm.streams.delete(JOURNAL_STREAM);

    // One replica on the same cluster is fine: its fence is the server's lock.
    expect(await ensureJournalStream(jsm, { replicas: 1 })).toEqual({ created: true, updated: [] });
    expect((await jsm.streams.info(JOURNAL_STREAM)).config.num_replicas).toBe(1);
    recordFault(ctx, {
      load: 'journal:provision and ensureJournalStream against the cluster',
      faults: `3 replicas asked for, and a 3-replica stream made by hand, on nats-server ${serverVersion}`,
      result: `refused in one line: "${lines[0]}"; nothing created; 1 replica provisioned`,
    });
  });
});

interface Failure {
  op: 'open' | 'append' | 'commit';
  error: unknown;
  ms: number;
  at: number;
}

interface Fault {
  kind: 'leader SIGKILL' | 'node stop';
  node: string;
  at: number;
  /** When every writer had appended again. */
  resumedMs: number;
}

describe('journal appends on a 3-replica stream while the cluster loses nodes', () => {
  it('the stream leader SIGKILLed, then a node stopped: appends go on, no acknowledged append is lost, failures are typed and bounded, check() holds', async (ctx) => {
    await recreateStream(3);
    const connections = await Promise.all(Array.from({ length: WRITERS }, () => cluster.connect()));
    /** Per writer, every append the server acknowledged: its sequence and its payload number. */
    const acked: Array<Array<{ seq: number; n: number }>> = connections.map(() => []);
    const failures: Failure[] = [];
    /** Per writer, when the newest acknowledged write was sent. */
    const lastAckSent: number[] = connections.map(() => 0);
    /** Per writer, the journal call it waits on, if any: a call that never returns is a failure too. */
    const inFlight: Array<{ op: Failure['op']; since: number } | null> = connections.map(() => null);
    let stopping = false;
    /** Iterations found committed on a later delivery: their commit landed, its answer did not. */
    let committedUnanswered = 0;

    /** `call` with its writer's in-flight entry set while it runs. */
    async function tracked<T>(w: number, op: Failure['op'], call: () => Promise<T>): Promise<T> {
      inFlight[w] = { op, since: performance.now() };
      try {
        return await call();
      } finally {
        inFlight[w] = null;
      }
    }

    /** The writers that have waited on one call for longer than its bound. */
    const hung = () =>
      inFlight.flatMap((f, w) =>
        f && performance.now() - f.since > (f.op === 'open' ? OPEN_FAIL_BOUND_MS : APPEND_FAIL_BOUND_MS)
          ? [`w${w} in ${f.op} for ${((performance.now() - f.since) / 1000).toFixed(1)} s`]
          : [],
      );

    async function writer(w: number, js: JetStreamClient): Promise<void> {
      const run = `w${w}`;
      let iteration = 0;
      let delivered = 1;
      let n = 0;
      while (!stopping) {
        const task: Task = { ...taskOf(run), iteration, delivered, streamSeq: delivered };
        let journal: Journal;
        let started = performance.now();
        try {
          // Retried through every outage: the crash-loop guard is for handlers that fail on their own.
          journal = await tracked(w, 'open', () =>
            Journal.open(js, task, { restartLimit: Number.POSITIVE_INFINITY }),
          );
        } catch (error) {
          failures.push({ op: 'open', error, ms: performance.now() - started, at: performance.now() });
          delivered += 1;
          await sleep(50);
          continue;
        }
        // An earlier attempt's commit landed though its answer was lost (OutcomeUnknownError):
        // the iteration is done, as a brain finds it on the next delivery; go on to the next.
        if (journal.committed()) {
          committedUnanswered += 1;
          iteration += 1;
          delivered = 1;
          continue;
        }
        let op: 'append' | 'commit' = 'append';
        try {
          // A recovering claim already holds some of this iteration's entries.
          const have = journal.records().filter((r) => r.type === 'entry').length;
          for (let e = have; e < ENTRIES && !stopping; e++) {
            n += 1;
            started = performance.now();
            const seq = await tracked(w, 'append', () => journal.append('entry', { w, n }));
            acked[w]!.push({ seq, n });
            lastAckSent[w] = started;
          }
          if (stopping) break;
          op = 'commit';
          started = performance.now();
          await tracked(w, 'commit', () => journal.commit({ action: 'continue' }));
          lastAckSent[w] = started;
          iteration += 1;
          delivered = 1;
        } catch (error) {
          failures.push({ op, error, ms: performance.now() - started, at: performance.now() });
          // The next delivery of this iteration takes over from the journal.
          delivered += 1;
          await sleep(50);
        }
      }
    }

    /** Resolves once every writer has had a write acknowledged that it sent after `since`. */
    async function untilAllWrite(since: number): Promise<number> {
      for (;;) {
        if (lastAckSent.every((t) => t > since)) return Math.max(...lastAckSent) - since;
        const stuck = hung();
        if (stuck.length > 0) throw new Error(`journal calls past their bound: ${stuck.join(', ')}`);
        if (performance.now() - since > RESUME_BOUND_MS) {
          const stuck = lastAckSent.flatMap((t, w) => (t > since ? [] : [`w${w}`]));
          throw new Error(`${stuck.join(', ')} did not write again within ${RESUME_BOUND_MS} ms`);
        }
        await sleep(20);
      }
    }

    const started = performance.now();
    const running = connections.map((nc, w) => writer(w, jetstream(nc)));
    const faults: Fault[] = [];

    async function injectFaults(): Promise<void> {
      await untilAllWrite(started);
      for (let round = 0; round < ROUNDS; round++) {
        // (a) The stream leader dies without a word.
        const leader = await settle(round === 0 ? 'the writers started' : `round ${round}`);
        await cluster.node(leader).kill('SIGKILL');
        // From its exit on, only a new leader can acknowledge.
        let at = performance.now();
        const resumedA = await untilAllWrite(at);
        faults.push({ kind: 'leader SIGKILL', node: leader, at, resumedMs: resumedA });
        await cluster.node(leader).start();
        // (b) A node is stopped (SIGTERM: it shuts down in order), one that is not the leader
        // now, while the writers' connections to it fail over to the others.
        const now = await settle(`${leader} SIGKILLed and started again`);
        const follower = cluster.nodes.find((x) => x.name !== now)!;
        await follower.kill('SIGTERM');
        at = performance.now();
        const resumedB = await untilAllWrite(at);
        // Down for a while, not only for the moment the writers take to move.
        await sleep(1_000);
        faults.push({ kind: 'node stop', node: follower.name, at, resumedMs: resumedB });
        await follower.start();
        await settle(`${follower.name} stopped and started again`);
      }
      await sleep(500);
    }

    const faultFailure = await injectFaults().then(
      () => null,
      (err: unknown) => err,
    );
    stopping = true;
    // A writer stuck in a call would keep this waiting forever: give up on it past its bound.
    const drained = Promise.all(running);
    while (await Promise.race([drained.then(() => false), sleep(250).then(() => true)])) {
      const stuck = hung();
      if (stuck.length > 0) throw new Error(`journal calls past their bound: ${stuck.join(', ')}`);
    }
    if (faultFailure) throw faultFailure;
    const totalMs = performance.now() - started;

    // No acknowledged append lost: each is stored at the sequence it was acknowledged with, in order.
    let appends = 0;
    let resentTwice = 0;
    for (let w = 0; w < WRITERS; w++) {
      const records = await settled(() => read(jetstream(admin), `w${w}`, STEP));
      const bySeq = new Map(records.map((r) => [r.seq, r]));
      const mine = acked[w]!;
      appends += mine.length;
      for (let i = 1; i < mine.length; i++) expect(mine[i]!.seq).toBeGreaterThan(mine[i - 1]!.seq);
      for (const { seq, n } of mine)
        expect(bySeq.get(seq)?.data, `w${w} append ${n} at seq ${seq}`).toEqual({ w, n });
      // check() finds every journal whole, but for one break this server is known to allow
      // (why provisioning refuses it): a resend stored a second time by a new stream leader that
      // had not yet applied the first copy. Any other violation fails the test.
      const twice = await storedTwice(records.map((r) => r.seq));
      resentTwice += twice.size;
      const report = await settled(() => check(admin, `w${w}`));
      const violations = report.steps.flatMap((s) => s.violations);
      expect(violations.filter((v) => !namesAny(v, twice))).toEqual([]);
      if (twice.size === 0) expect(violations).toEqual([]);
    }

    // Every failure is the journal's "not now" (JournalUnavailableError, OutcomeUnknownError
    // among them), never a misleading NotProvisionedError; each returned within its bound.
    for (const f of failures) {
      expect(f.error, `${f.op}: ${String(f.error)}`).toBeInstanceOf(JournalError);
      expect(f.error, `${f.op}: ${String(f.error)}`).toBeInstanceOf(JournalUnavailableError);
      expect(f.ms).toBeLessThan(f.op === 'open' ? OPEN_FAIL_BOUND_MS : APPEND_FAIL_BOUND_MS);
    }
    const why = (pattern: RegExp) => failures.filter((f) => pattern.test((f.error as Error).message)).length;
    const writes = failures.filter((f) => f.op !== 'open');
    const opens = failures.filter((f) => f.op === 'open');
    const max = (xs: Failure[]) => (xs.length ? Math.max(...xs.map((f) => f.ms)) : 0);
    const unknown = failures.filter((f) => f.error instanceof OutcomeUnknownError).length;
    const kills = faults.filter((f) => f.kind === 'leader SIGKILL');
    const stops = faults.filter((f) => f.kind === 'node stop');
    const range = (xs: Fault[]) =>
      `${(Math.min(...xs.map((f) => f.resumedMs)) / 1000).toFixed(1)}–${(Math.max(...xs.map((f) => f.resumedMs)) / 1000).toFixed(1)} s`;
    recordFault(ctx, {
      load: `${WRITERS} writers, each its own journal: claim, ${ENTRIES} entries, commit, repeated; 3 replicas, nats-server ${serverVersion}`,
      faults: `${ROUNDS}× (the stream leader SIGKILLed and restarted in place, then a follower stopped with SIGTERM and restarted)`,
      result:
        `${appends} appends acknowledged, 0 lost, each at its acknowledged sequence, in order; ` +
        `${failures.length} failures, all JournalUnavailableError (${why(/connection/)} connection down or dropped, ` +
        `${why(/no leader of/)} no stream leader, ${why(/temporarily unavailable/)} cluster not available, ` +
        `${why(/: timeout/)} read timeouts, ${why(/no record for/)} stalled reads, ${unknown} OutcomeUnknownError; ` +
        `${committedUnanswered} commits found landed by the next delivery): ` +
        `appends/commits ${writes.length}, slowest ${(max(writes) / 1000).toFixed(1)} s (bound ${APPEND_FAIL_BOUND_MS / 1000} s), ` +
        `opens ${opens.length}, slowest ${(max(opens) / 1000).toFixed(1)} s (bound ${OPEN_FAIL_BOUND_MS / 1000} s); ` +
        `every writer appending again ${range(kills)} after a leader kill, ${range(stops)} after a node stop; ` +
        `check() ok on ${WRITERS} journals` +
        (resentTwice > 0
          ? ` but for ${resentTwice} resends a new stream leader stored a second time (the fence before 2.11.0)`
          : '') +
        `${stepDownNote()}; ${(totalMs / 1000).toFixed(1)} s`,
    });
  }, 600_000);
});

/**
 * Of the stream sequences `seqs`, those holding a record whose `Nats-Msg-Id` an earlier one of
 * them already carries: one publish stored twice.
 */
async function storedTwice(seqs: number[]): Promise<Set<number>> {
  const jsm = await jetstreamManager(admin);
  const seen = new Set<string>();
  const twice = new Set<number>();
  for (const seq of [...seqs].sort((a, b) => a - b)) {
    const id = (await jsm.streams.getMessage(JOURNAL_STREAM, { seq }))?.header.get('Nats-Msg-Id');
    if (!id) continue;
    if (seen.has(id)) twice.add(seq);
    seen.add(id);
  }
  return twice;
}

/** Whether a check() violation names one of `seqs` ("seq 28", "at seq 27, 28"). */
function namesAny(violation: string, seqs: Set<number>): boolean {
  const named = [...violation.matchAll(/seq ((?:\d+(?:, )?)+)/g)].flatMap((m) =>
    m[1]!.split(', ').map(Number),
  );
  return named.some((seq) => seqs.has(seq));
}
