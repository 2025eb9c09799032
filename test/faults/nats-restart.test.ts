/**
 * NATS killed under durable turns (docs/guarantees.md): workers take model turns from
 * the queue's claim lane and run each as a durable turn — a model call, an unsafe tool call, a
 * progress entry, a second model call, a commit — against a private nats-server. Mid-journal
 * (inside an unsafe tool, after its intent is recorded: the worst place) the server is
 * SIGKILLed, and restarted in place (same ports, same store) once the outage has been
 * observed.
 *
 * What must hold: every journal call during the outage rejects at once with
 * `JournalUnavailableError`; the failed turn leaves its item uncompleted; once the server is
 * back (and the lease has lapsed — moved by backdating, as the ttl would) the next claimant
 * finishes the turn from the journal without re-requesting a recorded model response or
 * starting the unsafe tool a second time; `check()` finds every journal whole; and appends
 * work again within 5 s of the server being back.
 */
import { type JetStreamClient, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { check } from '../../src/journal/check.js';
import { JournalUnavailableError } from '../../src/journal/errors.js';
import { Journal } from '../../src/journal/journal.js';
import { read, readTail } from '../../src/journal/read.js';
import { ScriptedModel } from '../../src/journal/scripted-model.js';
import { ensureJournalStream } from '../../src/journal/stream.js';
import type { Json } from '../../src/journal/types.js';
import { claim, enqueue, type Item } from '../../src/queue/index.js';
import { runDurableTurn, type TurnOutcome } from '../../src/turns/durable-turn.js';
import { useTestDb } from '../helpers/db.js';
import { readWork, setupSession } from '../helpers/factories.js';
import { atScale, recordFault } from '../helpers/faults.js';
import { nextStatus, untilJournalWorks } from '../helpers/journal.js';
import { type NatsServer, startNatsServer } from '../helpers/nats-server.js';

const TURNS = atScale(12, 60);
const WORKERS = atScale(3, 8);
const RESTARTS = atScale(1, 3);
/** Longer than the test: a lease lapses only when the test backdates it, as the ttl would. */
const TTL_MS = 120_000;
/** A call during the outage must reject within this (the client's own timeout is 5 s). */
const REJECT_BOUND_MS = 2_000;
/** Appends must succeed again within this of the server being back. */
const RECOVERY_BOUND_MS = 5_000;
/** Appends a probe tries while the server is down, each timed. */
const PROBES_PER_OUTAGE = 3;
/** How long a worker with nothing to claim waits for a wake before failing the test. */
const IDLE_BOUND_MS = 30_000;

interface Turn {
  item: { id: string; sessionId: string };
  model: ScriptedModel;
  /** Model requests per call position, and model writes that failed per position. */
  requested: number[];
  lostWrites: number[];
  deploys: number;
  failures: number;
  /** Whether a holder that then failed had started the unsafe tool. */
  toolCut: boolean;
  outcome: TurnOutcome | null;
}

interface Outage {
  killedAt: number;
  /** When every connection was back in service. */
  backAt: number;
  probeRejectMs: number[];
  recoveryMs: number;
}

const t = useTestDb('pg');
let nats: NatsServer;

beforeAll(async () => {
  nats = await startNatsServer();
  await ensureJournalStream(await jetstreamManager(await nats.connect()));
}, 60_000);

afterAll(async () => {
  await nats?.stop();
});

describe('nats-server killed and restarted under durable turns', () => {
  it('rejects journal calls at once during the outage, retries each failed turn with the next claimant, repeats no recorded model call or unsafe tool, and check() holds', async (ctx) => {
    const turns = new Map<string, Turn>();
    for (let i = 0; i < TURNS; i++) {
      const s = await setupSession(t.db, 'cloud');
      const { work } = await enqueue(t.db, { ...s, kind: 'model_turn' });
      turns.set(work.id, {
        item: { id: work.id, sessionId: s.sessionId },
        model: new ScriptedModel(...Array.from({ length: 8 }, (_, k) => ({ text: `r${k}` }))),
        requested: [0, 0],
        lostWrites: [0, 0],
        deploys: 0,
        failures: 0,
        toolCut: false,
        outcome: null,
      });
    }

    const connections = await Promise.all(Array.from({ length: WORKERS }, () => nats.connect()));
    const probeNc = await nats.connect();
    const probeJs = jetstream(probeNc);
    const probe = await Journal.open(probeJs, {
      runId: 'probe',
      stepId: 'agent',
      iteration: 0,
      attempt: 1,
      delivered: 1,
    });

    const outages: Outage[] = [];
    /** Every failed turn: how long its runDurableTurn took to reject, and when it did. */
    const rejections: Array<{ ms: number; at: number; error: unknown }> = [];
    /** Items whose turn failed, waiting for their lease to lapse. */
    const failed = new Set<string>();
    let outage: Promise<void> | null = null;
    /** What went wrong bringing the server back, if anything: every worker stops on it. */
    let outageFailure: unknown = null;
    let done = 0;
    let wake: { promise: Promise<void>; resolve: () => void } = signal();

    function signal() {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      return { promise, resolve };
    }
    function wakeAll() {
      const w = wake;
      wake = signal();
      w.resolve();
    }

    /** The lease lapses as its ttl would have: the next claim reclaims the item. */
    async function lapseFailed(): Promise<void> {
      const ids = [...failed];
      failed.clear();
      for (const id of ids) {
        await t.db.execute(
          sql`UPDATE work_items SET lease_expires_at = now() - interval '1 second' WHERE id = ${id}`,
        );
      }
      wakeAll();
    }

    /** Kills the server now, and brings it back once the outage was seen by the probe and a turn. */
    function startOutage(): void {
      const killedAt = performance.now();
      const dropped = nextStatus(probeNc, 'disconnect');
      const killed = nats.kill('SIGKILL');
      outage = (async () => {
        await killed;
        await dropped;
        const probeRejectMs: number[] = [];
        for (let i = 0; i < PROBES_PER_OUTAGE; i++) {
          const started = performance.now();
          const err = await probe.append('entry', { probe: i }).catch((e: unknown) => e);
          probeRejectMs.push(performance.now() - started);
          expect(err).toBeInstanceOf(JournalUnavailableError);
          expect(err).toMatchObject({ mayBeStored: false });
        }
        const restartAt = performance.now();
        await nats.start();
        const recoveryMs = await untilJournalWorks(
          () => probe.append('entry', { back: outages.length }),
          RECOVERY_BOUND_MS,
        );
        // Every worker's connection redials on its own schedule; the outage ends when all are back.
        await Promise.all(
          connections.map((nc) =>
            untilJournalWorks(() => readTail(jetstream(nc), 'probe', 'agent'), RECOVERY_BOUND_MS),
          ),
        );
        outages.push({ killedAt, backAt: performance.now(), probeRejectMs, recoveryMs });
        expect(restartAt).toBeGreaterThan(killedAt);
        outage = null;
        await lapseFailed();
      })().catch((err: unknown) => {
        outageFailure = err;
        wakeAll();
      });
    }

    /** The kill points: the first unsafe tool call after this many turns are done. */
    const killAfter = Array.from({ length: RESTARTS }, (_, i) =>
      Math.floor(((i + 1) * TURNS) / (RESTARTS + 1)),
    );

    async function runTurn(js: JetStreamClient, item: Item): Promise<void> {
      const turn = turns.get(item.id)!;
      const started = performance.now();
      try {
        const outcome = await runDurableTurn(
          { db: t.db, js },
          item,
          async ({ journal }) => {
            const ask = async (call: number): Promise<Json> => {
              try {
                return await journal.model(() => {
                  turn.requested[call]! += 1;
                  return turn.model.respond();
                });
              } catch (err) {
                if (err instanceof JournalUnavailableError) turn.lostWrites[call]! += 1;
                throw err;
              }
            };
            const plan = await ask(0);
            const deployed = await journal.tool({ name: 'deploy', input: { plan } }, 'unsafe', async () => {
              turn.deploys += 1;
              if (!outage && killAfter.length > 0 && done >= killAfter[0]!) {
                killAfter.shift();
                startOutage();
              }
              return { deployed: true };
            });
            await journal.append('entry', { progress: 'deployed' });
            const answer = await ask(1);
            return { action: 'complete', output: { plan, answer, deployed: deployed.output ?? null } };
          },
          { ttlMs: TTL_MS },
        );
        turn.outcome = outcome;
        expect(['committed', 'recovered']).toContain(outcome.outcome);
        done += 1;
        if (done === TURNS) wakeAll();
      } catch (err) {
        if (!(err instanceof JournalUnavailableError)) throw err;
        turn.failures += 1;
        // Not half-written: the failed holder did not complete the item.
        expect((await readWork(t.db, item.id))!.state).toBe('active');
        if (turn.deploys > 0 && !turn.outcome) turn.toolCut = true;
        rejections.push({ ms: performance.now() - started, at: performance.now(), error: err });
        failed.add(item.id);
        // Outside an outage nobody would lapse it: a failure there is a finding, kept for the asserts.
        if (!outage) await lapseFailed();
      }
    }

    async function worker(nc: NatsConnection): Promise<void> {
      const js = jetstream(nc);
      while (done < TURNS) {
        if (outageFailure) throw outageFailure;
        // Taken before the claim: a wake while the claim runs must not be missed.
        const idle = wake.promise;
        const item = await claim(t.db, 'model_turn', TTL_MS);
        if (item) {
          await runTurn(js, item);
          continue;
        }
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([
          idle,
          new Promise((_, reject) => {
            timer = setTimeout(
              () => reject(new Error(`a worker found no work for ${IDLE_BOUND_MS} ms`)),
              IDLE_BOUND_MS,
            );
          }),
        ]).finally(() => clearTimeout(timer));
      }
    }

    const started = performance.now();
    await Promise.all(connections.map(worker));
    const totalMs = performance.now() - started;
    // A turn can finish the run while the last outage is still winding down.
    await (outage as Promise<void> | null);
    if (outageFailure) throw outageFailure;

    // Every outage happened, each observed and recovered from.
    expect(outages).toHaveLength(RESTARTS);
    const probeMax = Math.max(...outages.flatMap((o) => o.probeRejectMs));
    const recoveryMax = Math.max(...outages.map((o) => o.recoveryMs));
    expect(probeMax).toBeLessThan(REJECT_BOUND_MS);
    expect(recoveryMax).toBeLessThanOrEqual(RECOVERY_BOUND_MS);

    // Every failure was typed, fast, and inside an outage.
    expect(rejections.length).toBeGreaterThanOrEqual(RESTARTS);
    const rejectMax = Math.max(...rejections.map((r) => r.ms));
    expect(rejectMax).toBeLessThan(REJECT_BOUND_MS);
    for (const r of rejections) {
      expect(outages.some((o) => r.at >= o.killedAt && r.at <= o.backAt)).toBe(true);
    }

    // Every turn finished once, by a later claimant where it had failed; nothing repeated.
    let retried = 0;
    for (const turn of turns.values()) {
      const row = (await readWork(t.db, turn.item.id))!;
      expect(row.state).toBe('stopped');
      if (turn.failures > 0) {
        retried += 1;
        expect(row.claims).toBeGreaterThan(turn.failures);
      }
      // A recorded response is replayed: a position is requested again only after its write failed.
      for (const call of [0, 1]) {
        expect(turn.requested[call]!).toBeGreaterThanOrEqual(1);
        expect(turn.requested[call]! - turn.lostWrites[call]!).toBeLessThanOrEqual(1);
      }
      expect(turn.model.requests()).toBe(turn.requested[0]! + turn.requested[1]!);
      // At most once per unsafe position, whatever the outage cut.
      expect(turn.deploys).toBeLessThanOrEqual(1);

      const records = await read(probeJs, turn.item.sessionId, 'model_turn');
      expect(records.filter((r) => r.type === 'commit')).toHaveLength(1);
      for (const call of [0, 1]) {
        expect(
          records.filter((r) => r.type === 'model.response' && (r.data as { call: number }).call === call),
        ).toHaveLength(1);
      }
      const report = await check(probeNc, turn.item.sessionId);
      expect(report.steps.flatMap((s) => s.violations)).toEqual([]);
      expect(report.ok()).toBe(true);
    }
    expect(retried).toBeGreaterThanOrEqual(RESTARTS);
    expect((await check(probeNc, 'probe')).ok()).toBe(true);

    const interrupted = [...turns.values()].filter((x) => x.toolCut).length;
    const rerequested = [...turns.values()].reduce((n, x) => n + x.requested[0]! + x.requested[1]! - 2, 0);
    recordFault(ctx, {
      load: `${TURNS} durable turns (model, unsafe tool, entry, model, commit), ${WORKERS} claimants`,
      faults: `nats-server SIGKILLed ${RESTARTS}× mid-journal (inside an unsafe tool), restarted in place`,
      result:
        `${rejections.length} turn failures, all JournalUnavailableError, max ${rejectMax.toFixed(0)} ms to reject ` +
        `(probe appends max ${probeMax.toFixed(1)} ms); ${retried} turns retried by the next claimant ` +
        `(${interrupted} had started the tool), 0 unsafe tool repeats, ${rerequested} model requests redone ` +
        `(only unrecorded ones); appends back ≤ ${recoveryMax.toFixed(0)} ms after restart; ` +
        `check() ok on ${TURNS} journals; ${(totalMs / 1000).toFixed(1)} s`,
    });
  });
});
