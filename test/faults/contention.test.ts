/**
 * Contention (docs/guarantees.md): many claimers of both lanes over one queue, with early
 * lease loss, then an independent SQL audit. Real PostgreSQL, the real Node server
 * (`startServer`) and the official SDK; the claimers are in `contention/claimers.ts`, the
 * audit in `contention/audit.ts`, the database's own change log in `contention/history.ts`.
 *
 * Four environments — two self_hosted, whose tool_exec items only the wire serves, and two
 * cloud — hold one unit of work per (session, kind): WIRE_SHARE of them tool_exec on the
 * self_hosted ones, the rest claim-lane kinds spread over all four. The pass criterion is
 * the audit's: 0 lost, 0 duplicated, 0 unexpected, every accepted completion fenced by a live
 * lease, no item ever handed out while its previous lease was live — and a deliberately
 * corrupted copy of the same records fails each of those checks.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueApiKey, issueEnvironmentKey } from '../../src/auth/credentials.js';
import { type EnqueueInput, enqueueMany, type WorkKind } from '../../src/queue/index.js';
import { openTestDb, type TestDb } from '../helpers/db.js';
import { createEnvironment } from '../helpers/factories.js';
import { atScale, recordFault } from '../helpers/faults.js';
import { type RunningServer, startServer } from '../helpers/server.js';
import { audit, corruptCopy, type Lane, PLANTED, snapshot, type Unit } from './contention/audit.js';
import {
  CLAIM_KINDS,
  inProcessClaimer,
  platformClaimer,
  pollerWireWorker,
  Run,
  rawWireWorker,
  type WireTarget,
} from './contention/claimers.js';
import { recordWorkHistory } from './contention/history.js';

const ITEMS = atScale(1_000, 10_000);
/** 32 at full scale: in-process claim lane, platform lane over HTTP, SDK wire workers (raw, WorkPoller). */
const CLAIMERS = atScale(
  { inProcess: 3, platform: 1, raw: 2, poller: 2 },
  { inProcess: 12, platform: 4, raw: 8, poller: 8 },
);
/** The wire does ~4 requests per item through one server; a smaller share keeps both lanes busy together. */
const WIRE_SHARE = 0.3;
/** The chance that a holder is paused past its lease once it holds an item. */
const LOSS_RATE = 0.02;
/** The run must finish well inside the suite's 120 s test timeout. */
const RUN_DEADLINE_MS = 90_000;

let testDb: TestDb;
let server: RunningServer;

beforeAll(async () => {
  testDb = await openTestDb('pg', { poolSize: 6 });
  await recordWorkHistory(testDb.db);
  // One pool connection per concurrent HTTP claimer, so the wire is not judged on pool waits.
  server = await startServer({ databaseUrl: testDb.url!, env: { LEASEHOLD_DB_POOL_SIZE: '20' } });
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await testDb?.close();
});

const shuffle = <T>(xs: T[]): T[] => {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [xs[i], xs[j]] = [xs[j]!, xs[i]!];
  }
  return xs;
};

/** The units: one session each, enqueued (acknowledged) through the library in batches. */
async function enqueueUnits(selfHosted: string[], cloud: string[]): Promise<{ units: Unit[]; wire: number }> {
  const wire = Math.round(ITEMS * WIRE_SHARE);
  const inputs: EnqueueInput[] = [];
  for (let i = 0; i < ITEMS; i++) {
    const environmentId = i < wire ? selfHosted[i % 2]! : [...selfHosted, ...cloud][i % 4]!;
    const kinds = cloud.includes(environmentId) ? CLAIM_KINDS : CLAIM_KINDS.filter((k) => k !== 'tool_exec');
    const kind: WorkKind = i < wire ? 'tool_exec' : kinds[Math.floor(Math.random() * kinds.length)]!;
    inputs.push({ environmentId, sessionId: `sesn_c${i}`, kind, traceContext: null });
  }
  const sessions = inputs.map((u) => ({ id: u.sessionId, environment_id: u.environmentId }));
  await testDb.db.execute(
    sql`INSERT INTO sessions (id, environment_id)
        SELECT id, environment_id FROM jsonb_to_recordset(${JSON.stringify(sessions)}::jsonb)
          AS s(id text, environment_id text)`,
  );
  const units: Unit[] = [];
  shuffle(inputs);
  for (let i = 0; i < inputs.length; i += 1_000) {
    for (const { created, work } of await enqueueMany(testDb.db, inputs.slice(i, i + 1_000))) {
      expect(created).toBe(true);
      units.push({ sessionId: work.sessionId, kind: work.kind });
    }
  }
  return { units, wire };
}

const perSecond = (n: number, fromMs: number, toMs: number) =>
  (n / Math.max(0.001, (toMs - fromMs) / 1000)).toFixed(0);

describe('contention', () => {
  it("claimers of both lanes with early lease loss: 0 lost, 0 completed twice, every completion under its holder's live lease (independent SQL audit)", async (ctx) => {
    const db = testDb.db;
    const selfHosted = [
      await createEnvironment(db, 'self_hosted'),
      await createEnvironment(db, 'self_hosted'),
    ];
    const cloud = [await createEnvironment(db, 'cloud'), await createEnvironment(db, 'cloud')];
    const targets: WireTarget[] = [];
    for (const environmentId of selfHosted) {
      const { key } = await issueEnvironmentKey(db, environmentId, 'contention', null);
      targets.push({ baseURL: server.baseURL, environmentId, key });
    }
    const platformKey = (await issueApiKey(db, 'contention', 'platform', null)).key;
    const { units, wire } = await enqueueUnits(selfHosted, cloud);

    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), RUN_DEADLINE_MS);
    const run = new Run(db, { claim: ITEMS - wire, wire }, LOSS_RATE, deadline.signal);
    const loops = [
      ...Array.from({ length: CLAIMERS.inProcess }, (_, i) =>
        inProcessClaimer(run, testDb.url!, `inproc-${i}`),
      ),
      ...Array.from({ length: CLAIMERS.platform }, (_, i) =>
        platformClaimer(run, server.baseURL, platformKey, `platform-${i}`),
      ),
      ...Array.from({ length: CLAIMERS.raw }, (_, i) => rawWireWorker(run, targets[i % 2]!, `raw-${i}`)),
      ...Array.from({ length: CLAIMERS.poller }, (_, i) =>
        pollerWireWorker(run, targets[i % 2]!, `poller-${i}`),
      ),
    ];
    const settled = await Promise.allSettled(loops);
    clearTimeout(timer);
    await Promise.all(run.stale);
    const elapsedMs = Date.now() - run.startedAt;

    expect(
      settled.filter((s) => s.status === 'rejected').map((s) => String((s as PromiseRejectedResult).reason)),
    ).toEqual([]);
    expect(run.failures).toEqual([]);
    expect(deadline.signal.aborted, `not finished within ${RUN_DEADLINE_MS} ms`).toBe(false);

    // What the clients saw: every stale write refused with the lane's answer, nothing else refused.
    const staleCalls = run.outcomes.filter((o) => o.stale);
    const refusedAs = new Set(staleCalls.map((o) => `${o.lane} ${o.call} ${o.outcome} ${o.status}`));
    expect([...refusedAs].sort()).toEqual(
      [...refusedAs]
        .filter((r) =>
          /^(claim|platform) (extend|complete) refused 409$|^wire (heartbeat|stop) refused (404|412)$/.test(
            r,
          ),
        )
        .sort(),
    );
    expect(run.outcomes.filter((o) => !o.stale && o.outcome !== 'accepted')).toEqual([]);
    expect(run.batchOverflows).toBe(0);
    expect(run.injected).toBeGreaterThan(0);

    // The audit, then the same audit over a copy with one planted violation of each class.
    await snapshot(db, 'audit_run', units, run.outcomes);
    const counts = await audit(db, 'audit_run');
    expect(counts).toMatchObject({
      lost: 0,
      duplicated: 0,
      unexpected: 0,
      unfenced: 0,
      overlapping: 0,
      ambiguous: 0,
    });
    expect(counts.finishes).toBe(ITEMS);
    expect(counts.recovered).toBeGreaterThan(0);
    expect(counts.handouts).toBeGreaterThanOrEqual(ITEMS + run.injected);
    await corruptCopy(db, 'audit_run', 'audit_corrupt');
    const corrupt = await audit(db, 'audit_corrupt');
    expect(corrupt, 'the audit must flag exactly the planted violations').toMatchObject(PLANTED);

    const rate = (lane: Lane) =>
      `${lane} ${perSecond(run.accepted[lane], run.startedAt, run.lastCompletionAt[lane])}/s`;
    const refused = staleCalls.length;
    recordFault(ctx, {
      load:
        `${ITEMS.toLocaleString('en')} items (${wire.toLocaleString('en')} wire), 4 envs, ` +
        `${CLAIMERS.inProcess + CLAIMERS.platform + CLAIMERS.raw + CLAIMERS.poller} claimers ` +
        `(${CLAIMERS.inProcess} in-process, ${CLAIMERS.platform} platform HTTP, ${CLAIMERS.raw} SDK raw, ${CLAIMERS.poller} WorkPoller)`,
      faults: `early lease loss p=${LOSS_RATE}: ${run.injected} holders paused past their lease, then wrote`,
      result:
        `lost 0, duplicated 0, unexpected 0, unfenced 0, overlapping 0; recovered ${counts.recovered}; ` +
        `${refused} stale writes, all refused (409/412/404); ${counts.handouts} hand-outs; ` +
        `${(elapsedMs / 1000).toFixed(1)} s, ${perSecond(ITEMS, 0, elapsedMs)}/s overall ` +
        `(${rate('claim')}, ${rate('platform')}, ${rate('wire')}); negative control flagged all 5 classes`,
    });
  });
});
