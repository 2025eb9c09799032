/**
 * Many Node replicas on one PostgreSQL (docs/deployment.md, "Scale out"): three servers
 * (`functions/node.ts`, each its own process, one DATABASE_URL) start together on an empty
 * database — they migrate it once between them — and serve one queue. SDK
 * WorkPollers and platform-lane claimers send every call — poll, ack, heartbeat, stop; claim,
 * extend, complete — to the next replica of their own round-robin while enqueuers keep adding
 * work over HTTP, and one replica is SIGKILLed mid-run and restarted in place. Holders whose
 * lease the test takes away send their stale proofs to every replica. Every replica runs
 * housekeeping each second, so those runs overlap as well.
 *
 * Afterwards: the contention test's independent SQL audit over the database's own change log
 * (0 lost, 0 duplicated, 0 unexpected, every finish fenced by its holder's live lease, no
 * hand-out while a lease or reservation was live), the clients' own overlap check, every
 * replica's stats, and every attempt's answer: no 5xx anywhere, connection failures only on
 * the killed replica while it was down. The clients are in `replicas/clients.ts`, the fleet
 * and its record of attempts in `replicas/fleet.ts`.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueApiKey, issueEnvironmentKey } from '../../src/auth/credentials.js';
import { maybeRow } from '../../src/db/handle.js';
import { openTestDb, type TestDb } from '../helpers/db.js';
import { createEnvironment } from '../helpers/factories.js';
import { atScale, recordFault } from '../helpers/faults.js';
import { ROOT } from '../helpers/server.js';
import { audit, snapshot } from './contention/audit.js';
import { recordWorkHistory } from './contention/history.js';
import { enqueuer, platformClaimer, type Targets, wireWorker } from './replicas/clients.js';
import { type Attempt, Fleet } from './replicas/fleet.js';
import { Run } from './replicas/run.js';
import { settle } from './replicas/settle.js';

const REPLICAS = 3;
const ITEMS = atScale(400, 3_000);
const POLLERS = atScale(2, 6);
const CLAIMERS = atScale(2, 6);
const ENQUEUERS = atScale(1, 2);
/** Enqueue at most this far ahead of the completions, so the load lasts the whole run. */
const WINDOW = atScale(40, 120);
/** The chance that a holder has its lease taken away once it holds an item. */
const LOSS_RATE = 0.03;
/** The kill comes once this share of the items is done; until the restart, enqueue stops at the next share. */
const KILL_AT = 0.3;
const ENQUEUE_BEFORE_RESTART = 0.6;
/** How long the killed replica stays down before it is started again. */
const DOWN_MS = 1_500;
const RUN_DEADLINE_MS = atScale(75_000, 240_000);
/** Every call a replica serves in the run; each must land on each replica. */
const CALLS = ['enqueue', 'poll', 'ack', 'heartbeat', 'stop', 'claim', 'extend', 'complete'] as const;
/** What a stale proof must get, on every replica: the lane's refusal. */
const STALE_ANSWERS = [
  'platform extend 409',
  'platform complete 409',
  'wire heartbeat 404',
  'wire stop 404',
  'wire echo 412',
];

let testDb: TestDb;
let fleet: Fleet;

beforeAll(async () => {
  testDb = await openTestDb('pg', { empty: true });
  fleet = await Fleet.start(REPLICAS, testDb.url!, { LEASEHOLD_HOUSEKEEPING_EVERY_MS: '1000' });
  // After the replicas' migrations made work_items, before any work exists.
  await recordWorkHistory(testDb.db);
}, 120_000);

afterAll(async () => {
  await fleet?.stop();
  await testDb?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const fmt = (n: number) => n.toLocaleString('en');
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

async function until(condition: () => boolean, signal: AbortSignal): Promise<void> {
  while (!condition()) {
    if (signal.aborted) throw new Error('the run deadline passed');
    await sleep(20);
  }
}

/** Answered attempts of `replica`, by call. */
function callsOf(attempts: Attempt[], replica: number): Record<string, number> {
  const by: Record<string, number> = {};
  for (const a of attempts)
    if (a.replica === replica && a.status !== null) by[a.call] = (by[a.call] ?? 0) + 1;
  return by;
}

describe('replicas', () => {
  it('three replicas started together on an empty database: the migrations applied once, one configured admin key', async () => {
    const journal = JSON.parse(await readFile(path.join(ROOT, 'drizzle/meta/_journal.json'), 'utf8')) as {
      entries: unknown[];
    };
    const applied = await maybeRow<{ n: number }>(
      testDb.db,
      sql`SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations`,
    );
    expect(applied!.n).toBe(journal.entries.length);
    const keys = await maybeRow<{ n: number; live: number }>(
      testDb.db,
      sql`SELECT count(*)::int AS n, count(*) FILTER (WHERE revoked_at IS NULL)::int AS live
            FROM api_keys WHERE source = 'config'`,
    );
    expect(keys).toEqual({ n: 1, live: 1 });
  });

  it(
    'three Node replicas on one database, one SIGKILLed and restarted mid-run: every item handed out once per lease, one accepted completion each, stale proofs refused by every replica, equal stats, no 5xx',
    async (ctx) => {
      const db = testDb.db;
      const wireEnv = await createEnvironment(db, 'self_hosted');
      const targets: Targets = {
        wire: { environmentId: wireEnv, key: (await issueEnvironmentKey(db, wireEnv, 'replicas', null)).key },
        platform: { environmentId: await createEnvironment(db, 'cloud') },
        platformKey: (await issueApiKey(db, 'replicas', 'platform', null)).key,
      };
      const deadline = new AbortController();
      const timer = setTimeout(() => deadline.abort(), RUN_DEADLINE_MS);
      const run = new Run(
        db,
        ITEMS,
        WINDOW,
        Math.round(ITEMS * ENQUEUE_BEFORE_RESTART),
        LOSS_RATE,
        deadline.signal,
      );
      const startedAt = performance.now();
      // A client that fails ends the run at once rather than at the deadline.
      const failed = (err: unknown) => {
        run.failures.push(String(err));
        deadline.abort();
      };
      const clients = [
        ...range(POLLERS).map((i) => wireWorker(run, fleet, targets, `poller-${i}`, i)),
        ...range(CLAIMERS).map((i) => platformClaimer(run, fleet, targets, `claimer-${i}`, i)),
        ...range(ENQUEUERS).map((i) => enqueuer(run, fleet, targets, `enq${i}`, i)),
      ].map((c) => c.catch(failed));

      const victim = Math.floor(Math.random() * REPLICAS);
      const kill = { at: 0, completions: 0, exitCode: 0, restartAt: 0, answeredAt: 0 };
      const fault = (async () => {
        await until(() => run.completions >= ITEMS * KILL_AT, deadline.signal);
        kill.completions = run.completions;
        kill.at = performance.now();
        kill.exitCode = await fleet.kill(victim);
        await sleep(DOWN_MS);
        kill.restartAt = performance.now();
        await fleet.restart(victim);
        kill.answeredAt = performance.now();
        run.enqueueAllowed = ITEMS;
        // One stale holder of each lane after the restart, so the restarted replica refuses both.
        run.forceLosses();
      })();
      const finished = (async () => {
        await fault;
        for (;;) {
          if (deadline.signal.aborted) return;
          if (run.enqueueIssued >= ITEMS && run.enqueuesInFlight === 0) {
            const open = await maybeRow<{ n: number }>(
              db,
              sql`SELECT count(*)::int AS n FROM work_items WHERE state <> 'stopped'`,
            );
            if (open!.n === 0) return;
          }
          await sleep(100);
        }
      })();
      const orchestration = await Promise.allSettled([fault, finished]);
      run.finish();
      await Promise.all(clients);
      await Promise.all(run.stale);
      clearTimeout(timer);
      const elapsedMs = performance.now() - startedAt;

      expect(orchestration.filter((s) => s.status === 'rejected').map((s) => String(s.reason))).toEqual([]);
      expect(run.failures).toEqual([]);
      expect(deadline.signal.aborted, `not finished within ${RUN_DEADLINE_MS} ms`).toBe(false);
      // The kill came mid-run, and it was a kill.
      expect(kill.completions).toBeLessThan(ITEMS * ENQUEUE_BEFORE_RESTART);
      expect(kill.exitCode).toBe(137);

      // The audit, in plain SQL over the change log, with what the clients could not know settled.
      const settled = await settle(run);
      expect(run.units.length + run.ambiguousEnqueues.length).toBe(ITEMS);
      await snapshot(db, 'audit_replicas', settled.units, settled.outcomes);
      const counts = await audit(db, 'audit_replicas');
      expect(counts).toMatchObject({
        lost: 0,
        duplicated: 0,
        unexpected: 0,
        unfenced: 0,
        overlapping: 0,
        ambiguous: 0,
      });
      expect(counts.finishes).toBe(settled.units.length);
      expect(run.overlaps).toEqual([]);
      // A finish refused on retry was refused because its first attempt had landed.
      expect(settled.finishesLanded).toBe(settled.ambiguousFinishes);
      // Every honest write accepted; every stale proof refused with its lane's answer by every replica.
      expect(run.outcomes.filter((o) => !o.stale && o.outcome !== 'accepted')).toEqual([]);
      const staleKinds = new Set(run.staleAnswers.map((a) => `${a.lane} ${a.call} ${a.status}`));
      expect([...staleKinds].filter((k) => !STALE_ANSWERS.includes(k))).toEqual([]);
      expect(run.staleHolders).toBeGreaterThanOrEqual(2);
      const perReplica = run.staleHolders * 2 + run.staleEchoes;
      for (const replica of range(REPLICAS)) {
        expect(run.staleAnswers.filter((a) => a.replica === replica)).toHaveLength(perReplica);
      }
      const staleAfterRestart = run.staleAnswers.filter(
        (a) => a.replica === victim && a.at > kill.answeredAt,
      ).length;
      expect(staleAfterRestart).toBeGreaterThanOrEqual(4);

      // Every attempt: no 5xx; connection failures only on the victim, only while it was down.
      const attempts = fleet.attempts;
      const serverErrors = attempts.filter((a) => a.status !== null && a.status >= 500);
      expect(serverErrors).toEqual([]);
      const cut = attempts.filter((a) => a.failure === 'refused' || a.failure === 'reset');
      const misplaced = cut.filter(
        (a) => a.replica !== victim || a.endedAt < kill.at || a.startedAt > kill.answeredAt,
      );
      expect(misplaced).toEqual([]);
      expect(attempts.filter((a) => a.failure === 'aborted' && a.endedAt < run.doneAt)).toEqual([]);
      const refused = cut.filter((a) => a.failure === 'refused').length;
      const reset = cut.filter((a) => a.failure === 'reset').length;
      expect(refused).toBeGreaterThan(0);
      const served = range(REPLICAS).map((r) => callsOf(attempts, r));
      const afterRestart = callsOf(
        attempts.filter((a) => a.startedAt > kill.answeredAt),
        victim,
      );
      for (const by of [...served, afterRestart]) {
        expect(CALLS.filter((c) => !by[c])).toEqual([]);
      }

      // The same stats from every replica, and the right ones.
      const stats = await Promise.all(
        range(REPLICAS).map(async (r) => {
          const work = new Anthropic({
            apiKey: fleet.adminKey,
            baseURL: fleet.url(r),
            fetch: fleet.fetchVia(() => r),
            maxRetries: 0,
          }).beta.environments.work;
          return {
            wire: await work.stats(wireEnv),
            platform: await work.stats(targets.platform.environmentId),
          };
        }),
      );
      for (const s of stats) expect(s).toEqual(stats[0]);
      const empty = { type: 'work_queue_stats', depth: 0, pending: 0, oldest_queued_at: null };
      expect(stats[0]).toEqual({
        wire: { ...empty, workers_polling: POLLERS },
        platform: { ...empty, workers_polling: 0 },
      });

      // The replicas said nothing about failures (a housekeeping run that collided would warn).
      for (const output of [...range(REPLICAS).map((r) => fleet.output(r)), ...fleet.deadOutput]) {
        expect(output).not.toMatch(/uncaught|unhandled|\[leasehold\] (warn|error)/i);
      }

      const total = (by: Record<string, number>) => Object.values(by).reduce((a, b) => a + b, 0);
      const ambiguousOther = run.ambiguous.length - settled.ambiguousFinishes;
      recordFault(ctx, {
        load:
          `${fmt(ITEMS)} items enqueued over HTTP during the run (half wire, half claim lane), ` +
          `${REPLICAS} Node replicas on one PostgreSQL; ${POLLERS} SDK WorkPollers (+ heartbeat/stop), ` +
          `${CLAIMERS} platform claimers, ${ENQUEUERS} enqueuer(s); every call round-robin over the replicas; ` +
          `housekeeping every 1 s on each`,
        faults:
          `replica ${victim} SIGKILLed ${seconds(kill.at - startedAt)} into the run (${fmt(kill.completions)} done), ` +
          `started again in place ${seconds(kill.restartAt - kill.at)} later, answering ${seconds(kill.answeredAt - kill.at)} after the kill; ` +
          `${run.staleHolders} holders lost their lease (p=${LOSS_RATE}, +1 per lane after the restart) and ` +
          `${run.staleEchoes} superseded heartbeat echoes replayed, each to every replica`,
        result:
          `lost 0, duplicated 0, unexpected 0, unfenced 0, overlapping 0 (SQL audit), 0 overlaps seen by the clients; ` +
          `${counts.finishes} finishes, ${counts.recovered} recovered, ${counts.handouts} hand-outs; ` +
          `calls answered per replica ${served.map((by, r) => `r${r} ${fmt(total(by))}`).join(' / ')} ` +
          `(r${victim} ${fmt(total(afterRestart))} after its restart); 0 × 5xx; ` +
          `connection failures only on r${victim} while down: ${refused} refused, ${reset} cut at the kill; ` +
          `${run.lostClaims} claims and ${run.ambiguousEnqueues.length} enqueues cut (${settled.enqueuesLanded} had landed), ` +
          `${settled.ambiguousFinishes} finishes cut and refused on retry (${settled.finishesLanded} had landed), ` +
          `${ambiguousOther} other writes cut; stale proofs: ${perReplica} per replica, all refused ` +
          `(409/404/412), ${staleAfterRestart} by r${victim} after its restart; stats equal on all ${REPLICAS}; ` +
          `${seconds(elapsedMs)}`,
      });
    },
    RUN_DEADLINE_MS + 45_000,
  );
});
