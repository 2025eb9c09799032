/**
 * Retention at scale, under load (docs/deployment.md, "Retention"): a database holding a large
 * backlog of due history — stopped work items past their retention, archived API sessions
 * with their logs and platform-lane sessions whose every item is past it, some with journal
 * runs on a real nats-server — while claimers drain a live lane and an enqueuer keeps adding
 * to it. Three housekeepers run `runOnce` back to back at once, as overlapping cron triggers
 * do, until a pass of all three deletes nothing. The platform sessions left empty are then
 * moved a retention into the past and the same three run again while the platform comes back
 * to some of them (an enqueue each, racing the deletion); then the deleted sessions' purges
 * come due (their grace moved into the past by backdating) and the three purge the journals.
 *
 * Afterwards every due row was deleted exactly once (the runs' counts add up to what was due,
 * no more), each run stayed within its bound, nothing younger than its retention and no live
 * item was touched, the live lane was served throughout (every item handed out once and
 * completed once), every session the platform came back to holds its new item, the due runs'
 * journals are empty and the live sessions' (and the returning ones') journals whole.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindAndEnqueue } from '../../src/api/routes/platform-enqueue.js';
import { rows, type SqlHandle } from '../../src/db/handle.js';
import { type HousekeepingCounts, runOnce } from '../../src/housekeeping/index.js';
import { Journal } from '../../src/journal/journal.js';
import { read } from '../../src/journal/read.js';
import { claim, completeAndClaim, enqueueMany } from '../../src/queue/index.js';
import { JOURNAL_PURGE_GRACE_MS, type JournalProvider } from '../../src/sessions/index.js';
import { openTestDb, type TestDb } from '../helpers/db.js';
import { createEnvironment } from '../helpers/factories.js';
import { atScale, recordFault } from '../helpers/faults.js';
import { connectJs, provisionJournal, taskOf } from '../helpers/journal.js';
import { type NatsServer, startNatsServer } from '../helpers/nats.js';
import { apiSession } from '../helpers/sessions.js';

const DAY = 86_400_000;
const RETAIN_WORK_MS = 7 * DAY;
const RETAIN_SESSIONS_MS = 30 * DAY;
const RETENTION = {
  retainStoppedWorkMs: RETAIN_WORK_MS,
  retainArchivedSessionsMs: RETAIN_SESSIONS_MS,
  retainEmptyPlatformSessionsMs: RETAIN_SESSIONS_MS,
};
/** What one run may delete of each, by the defaults: 500 rows a statement, 20 statements a run. */
const RUN_BOUND = 500 * 20;

const DUE_ITEMS = atScale(6_000, 200_000);
const YOUNG_ITEMS = atScale(300, 2_000);
const DUE_SESSIONS = atScale(120, 2_000);
const EVENTS_PER_SESSION = 5;
const JOURNALED = atScale(20, 200);
const DUE_PLATFORM = atScale(200, 2_000);
const ITEMS_PER_PLATFORM = 3;
/** Platform sessions the platform comes back to during their deletion: every tenth, journaled or not. */
const comesBack = (i: number) => i % 10 === 0;
const LIVE_JOURNALS = 5;
const HOUSEKEEPERS = 3;
const CLAIMERS = 4;
/** Live items enqueued before the run and then in batches while it lasts. */
const LIVE_BACKLOG = atScale(300, 2_000);
const LIVE_BATCH = 50;
const STEP = 'model_turn';

/** API sessions cloned from `template`: ids `<prefix>0001…`, archived `archivedAgoMs` ago, each with a log. */
async function cloneArchivedSessions(
  db: SqlHandle,
  template: string,
  prefix: string,
  n: number,
  archivedAgoMs: number | null,
): Promise<string[]> {
  await db.execute(
    sql`INSERT INTO sessions
        SELECT (jsonb_populate_record(NULL::sessions, to_jsonb(s) || jsonb_build_object(
                  'id', ${prefix} || lpad(g::text, 6, '0'),
                  'last_seq', ${EVENTS_PER_SESSION}::int,
                  'archived_at', CASE WHEN ${archivedAgoMs}::double precision IS NULL THEN NULL
                                      ELSE now() - ${archivedAgoMs}::double precision * interval '1 millisecond' END,
                  'created_at', now() - interval '400 days'))).*
          FROM sessions s, generate_series(1, ${n}) g
         WHERE s.id = ${template}`,
  );
  await db.execute(
    sql`INSERT INTO session_events (session_id, seq, id, type, body, processed_at)
        SELECT ${prefix} || lpad(g::text, 6, '0'), e, ${`${prefix}ev_`} || g || '_' || e, 'user.message',
               jsonb_build_object('i', e), now() - interval '400 days'
          FROM generate_series(1, ${n}) g, generate_series(1, ${EVENTS_PER_SESSION}) e`,
  );
  return Array.from({ length: n }, (_, i) => `${prefix}${String(i + 1).padStart(6, '0')}`);
}

/** `n` stopped items of one platform session, stopped `agoMs` ago. */
async function stoppedItems(db: SqlHandle, environmentId: string, tag: string, n: number, agoMs: number) {
  const sessionId = `sesn_${tag}`;
  await db.execute(sql`INSERT INTO sessions (id, environment_id) VALUES (${sessionId}, ${environmentId})`);
  await db.execute(
    sql`INSERT INTO work_items (id, environment_id, session_id, kind, lane, state, created_at, updated_at, stopped_at)
        SELECT ${`work_${tag}_`} || lpad(g::text, 8, '0'), ${environmentId}, ${sessionId}, 'tool_exec', 'claim',
               'stopped', now() - ${agoMs + 1}::double precision * interval '1 millisecond',
               now() - ${agoMs}::double precision * interval '1 millisecond',
               now() - ${agoMs}::double precision * interval '1 millisecond'
          FROM generate_series(1, ${n}) g`,
  );
}

/** `n` platform-lane sessions `<prefix>000001…`, each with its items stopped `agoMs` ago. */
async function stoppedPlatformSessions(
  db: SqlHandle,
  environmentId: string,
  prefix: string,
  n: number,
  agoMs: number,
): Promise<string[]> {
  const ids = Array.from({ length: n }, (_, i) => `${prefix}${String(i + 1).padStart(6, '0')}`);
  await db.execute(
    sql`INSERT INTO sessions (id, environment_id, created_at)
        SELECT s, ${environmentId}, now() - interval '400 days'
          FROM jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb) s`,
  );
  await db.execute(
    sql`INSERT INTO work_items (id, environment_id, session_id, kind, lane, state, created_at, updated_at, stopped_at)
        SELECT 'work_' || s || '_' || k, ${environmentId}, s, (ARRAY['model_turn', 'web_exec', 'mcp_exec'])[k], 'claim',
               'stopped', now() - ${agoMs + 1}::double precision * interval '1 millisecond',
               now() - ${agoMs}::double precision * interval '1 millisecond',
               now() - ${agoMs}::double precision * interval '1 millisecond'
          FROM jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb) s, generate_series(1, ${ITEMS_PER_PLATFORM}) k`,
  );
  return ids;
}

async function count(db: SqlHandle, query: ReturnType<typeof sql>): Promise<number> {
  const [row] = await rows<{ n: number }>(db, query);
  return row!.n;
}

function sum(runs: HousekeepingCounts[], key: keyof HousekeepingCounts): number {
  return runs.reduce((a, r) => a + r[key], 0);
}

describe('retention at scale under load', () => {
  let t: TestDb;
  let nats: NatsServer;

  beforeAll(async () => {
    [t, nats] = await Promise.all([openTestDb('pg', { poolSize: 24 }), startNatsServer()]);
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await nats?.stop();
  });

  it('overlapping housekeepers delete every due row exactly once, in bounded runs, while the live lane is served; then purge the deleted runs’ journals', async (ctx) => {
    const started = performance.now();
    // The due history, and what must survive it.
    const env = await createEnvironment(t.db, 'cloud');
    await stoppedItems(t.db, env, 'due', DUE_ITEMS, RETAIN_WORK_MS + DAY);
    await stoppedItems(t.db, env, 'young', YOUNG_ITEMS, RETAIN_WORK_MS - DAY);
    const { sessionId: template } = await apiSession(t.db, { environmentId: env });
    const due = await cloneArchivedSessions(
      t.db,
      template,
      'sesn_old',
      DUE_SESSIONS,
      RETAIN_SESSIONS_MS + DAY,
    );
    const recent = await cloneArchivedSessions(t.db, template, 'sesn_new', 10, RETAIN_SESSIONS_MS - DAY);
    const live = await cloneArchivedSessions(t.db, template, 'sesn_liv', LIVE_JOURNALS, null);
    const platform = await stoppedPlatformSessions(t.db, env, 'plat_', DUE_PLATFORM, RETAIN_WORK_MS + DAY);
    await provisionJournal(nats);
    const { js, nc } = await connectJs(nats);
    const journaled = due.slice(0, JOURNALED);
    const platformJournaled = platform.slice(0, JOURNALED);
    for (const runId of [...journaled, ...live, ...platformJournaled]) {
      const journal = await Journal.open(js, taskOf(runId, { stepId: STEP }));
      await journal.append('entry', { turn: 0 });
    }
    await t.db.execute(sql`VACUUM ANALYZE work_items`);
    await t.db.execute(sql`VACUUM ANALYZE sessions`);
    const seededS = (performance.now() - started) / 1000;

    // The live lane: claimers draining, an enqueuer adding, for as long as the housekeepers run.
    const liveEnv = await createEnvironment(t.db, 'cloud');
    let liveSeq = 0;
    const enqueueLive = async (n: number): Promise<number> => {
      if (n > 500) return (await enqueueLive(500)) + (await enqueueLive(n - 500));
      const inputs = Array.from({ length: n }, () => ({
        environmentId: liveEnv,
        sessionId: `sesn_lane_${++liveSeq}`,
        kind: 'web_exec' as const,
      }));
      await t.db.execute(
        sql`INSERT INTO sessions (id, environment_id)
            SELECT s, ${liveEnv} FROM jsonb_array_elements_text(${JSON.stringify(inputs.map((i) => i.sessionId))}::jsonb) s`,
      );
      const created = await enqueueMany(t.db, inputs);
      return created.length;
    };
    let enqueued = await enqueueLive(LIVE_BACKLOG);
    let housekeeping = true;
    let enqueuing = true;
    const handedOut = new Map<string, number>();
    let completed = 0;
    const claimMs: number[] = [];
    const claimer = async () => {
      const first = performance.now();
      let item = await claim(t.db, 'web_exec', 60_000);
      claimMs.push(performance.now() - first);
      // Until the enqueuer has stopped and the lane is empty.
      while (item || enqueuing) {
        if (!item) {
          await new Promise((r) => setTimeout(r, 5));
          item = await claim(t.db, 'web_exec', 60_000);
          continue;
        }
        handedOut.set(item.id, (handedOut.get(item.id) ?? 0) + 1);
        const t0 = performance.now();
        const step = await completeAndClaim(t.db, item, 'web_exec', 60_000);
        claimMs.push(performance.now() - t0);
        if (step.completed) completed++;
        item = step.next;
      }
    };
    const enqueuer = async () => {
      while (housekeeping) {
        enqueued += await enqueueLive(LIVE_BATCH);
        await new Promise((r) => setTimeout(r, 20));
      }
      enqueuing = false;
    };

    // Three housekeepers, each running back to back until a pass of all three deletes nothing.
    const runs: HousekeepingCounts[] = [];
    const runMs: number[] = [];
    const housekeeper = async () => {
      for (;;) {
        const t0 = performance.now();
        const counts = await runOnce({ db: t.db }, RETENTION);
        runMs.push(performance.now() - t0);
        runs.push(counts);
        if (counts.deletedWorkItems === 0 && counts.deletedSessions === 0) return;
      }
    };
    const retentionStarted = performance.now();
    const lane = Promise.all([...Array.from({ length: CLAIMERS }, claimer), enqueuer()]);
    await Promise.all(Array.from({ length: HOUSEKEEPERS }, housekeeper));
    const retentionS = (performance.now() - retentionStarted) / 1000;
    const completedDuring = completed;
    housekeeping = false;
    await lane;

    // Every due row once; what was younger, and the live lane, untouched.
    const dueItems = DUE_ITEMS + DUE_PLATFORM * ITEMS_PER_PLATFORM;
    expect(sum(runs, 'deletedWorkItems')).toBe(dueItems);
    expect(sum(runs, 'deletedSessions')).toBe(DUE_SESSIONS);
    expect(sum(runs, 'deletedEvents')).toBe(DUE_SESSIONS * EVENTS_PER_SESSION);
    expect(Math.max(...runs.map((r) => r.deletedWorkItems))).toBeLessThanOrEqual(RUN_BOUND);
    expect(Math.max(...runs.map((r) => r.deletedSessions + r.deletedEvents))).toBeLessThanOrEqual(RUN_BOUND);
    expect(
      await count(
        t.db,
        sql`SELECT count(*)::int AS n FROM work_items WHERE state = 'stopped'
               AND stopped_at < now() - ${RETAIN_WORK_MS}::double precision * interval '1 millisecond'`,
      ),
    ).toBe(0);
    expect(
      await count(t.db, sql`SELECT count(*)::int AS n FROM work_items WHERE session_id = 'sesn_young'`),
    ).toBe(YOUNG_ITEMS);
    expect(await count(t.db, sql`SELECT count(*)::int AS n FROM sessions WHERE id LIKE 'sesn_old%'`)).toBe(0);
    expect(
      await count(
        t.db,
        sql`SELECT count(*)::int AS n FROM session_events WHERE session_id LIKE 'sesn_new%' OR session_id LIKE 'sesn_liv%'`,
      ),
    ).toBe((recent.length + live.length) * EVENTS_PER_SESSION);
    expect(handedOut.size).toBe(enqueued);
    expect([...handedOut.values()].every((n) => n === 1)).toBe(true);
    expect(completed).toBe(enqueued);
    expect(
      await count(t.db, sql`SELECT count(*)::int AS n FROM work_items WHERE environment_id = ${liveEnv}`),
    ).toBe(enqueued);

    // The platform sessions whose last items went are stamped (with 'sesn_due', whose items
    // all went too); the live lane's and 'sesn_young' are not. A retention later they go,
    // while the platform comes back to every tenth.
    const stamped = sql`SELECT count(*)::int AS n FROM sessions WHERE emptied_at IS NOT NULL`;
    expect(await count(t.db, stamped)).toBe(DUE_PLATFORM + 1);
    expect(sum(runs, 'deletedPlatformSessions')).toBe(0);
    await t.db.execute(
      sql`UPDATE sessions SET emptied_at = emptied_at - ${RETAIN_SESSIONS_MS + DAY}::double precision * interval '1 millisecond'
           WHERE emptied_at IS NOT NULL`,
    );
    const returning = platform.filter((_, i) => comesBack(i));
    const platformRuns: HousekeepingCounts[] = [];
    const platformStarted = performance.now();
    // Two platform callers, each coming back to its sessions one after another, so the
    // returns span the deletion: early ones land in a kept session, later ones bind anew.
    const returned: string[] = [];
    const comebacks = [0, 1].map(async (caller) => {
      for (const sessionId of returning.filter((_, i) => i % 2 === caller)) {
        returned.push(
          (await bindAndEnqueue(t.db, { environmentId: env, sessionId, kind: 'model_turn' })).work.id,
        );
      }
    });
    await Promise.all(
      Array.from({ length: HOUSEKEEPERS }, async () => {
        for (;;) {
          const counts = await runOnce({ db: t.db }, RETENTION);
          platformRuns.push(counts);
          if (counts.deletedPlatformSessions === 0) return;
        }
      }),
    );
    const platformS = (performance.now() - platformStarted) / 1000;
    await Promise.all(comebacks);
    const deletedPlatform = sum(platformRuns, 'deletedPlatformSessions');
    const kept = sql`SELECT count(*)::int AS n FROM sessions WHERE id LIKE 'plat\_%'`;
    // Each due session went once, or was kept because its item arrived first; each one the
    // platform came back to holds its new item, in a session kept or bound anew.
    expect(await count(t.db, kept)).toBe(returning.length);
    expect(deletedPlatform).toBeGreaterThanOrEqual(DUE_PLATFORM + 1 - returning.length);
    expect(deletedPlatform).toBeLessThanOrEqual(DUE_PLATFORM + 1);
    expect(Math.max(...platformRuns.map((r) => r.deletedPlatformSessions))).toBeLessThanOrEqual(RUN_BOUND);
    expect(
      await count(
        t.db,
        sql`SELECT count(*)::int AS n FROM work_items w JOIN sessions s ON s.id = w.session_id
             WHERE w.id IN (SELECT jsonb_array_elements_text(${JSON.stringify(returned)}::jsonb))`,
      ),
    ).toBe(returning.length);
    const revived = DUE_PLATFORM + 1 - deletedPlatform;

    // The deleted sessions' purges come due; the same three purge the journals. A session the
    // platform came back to after its deletion cancelled its purge (or, when its binding
    // waited on the deletion itself, left it pending behind the session, where housekeeping
    // passes it over): its journal stays.
    const dueRuns = DUE_SESSIONS + DUE_PLATFORM + 1 - returning.length;
    const orphanPurges = sql`SELECT count(*)::int AS n FROM journal_purges p
                              WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = p.run_id)`;
    expect(await count(t.db, orphanPurges)).toBe(dueRuns);
    await t.db.execute(
      sql`UPDATE journal_purges
             SET requested_at = requested_at - ${JOURNAL_PURGE_GRACE_MS + 60_000}::double precision * interval '1 millisecond'`,
    );
    const journal: JournalProvider = () => jetstreamManager(nc);
    const purges: HousekeepingCounts[] = [];
    const purgeStarted = performance.now();
    await Promise.all(
      Array.from({ length: HOUSEKEEPERS }, async () => {
        for (;;) {
          const counts = await runOnce({ db: t.db, journal }, RETENTION);
          purges.push(counts);
          if (counts.purgedJournals === 0) return;
        }
      }),
    );
    const purgeS = (performance.now() - purgeStarted) / 1000;
    expect(sum(purges, 'purgedJournals')).toBe(dueRuns);
    expect(await count(t.db, orphanPurges)).toBe(0);
    for (const runId of journaled) expect(await read(js, runId, STEP)).toEqual([]);
    for (const [i, runId] of platformJournaled.entries()) {
      expect((await read(js, runId, STEP)).map((r) => r.type)).toEqual(
        comesBack(i) ? ['claim', 'entry'] : [],
      );
    }
    for (const runId of live) {
      expect((await read(js, runId, STEP)).map((r) => r.type)).toEqual(['claim', 'entry']);
    }
    await nc.close();

    claimMs.sort((a, b) => a - b);
    const p = (q: number) =>
      claimMs[Math.min(claimMs.length - 1, Math.floor(q * claimMs.length))]!.toFixed(1);
    recordFault(ctx, {
      load: `${DUE_ITEMS.toLocaleString('en-US')} stopped items past their retention (and ${YOUNG_ITEMS.toLocaleString('en-US')} within it), ${DUE_SESSIONS.toLocaleString('en-US')} archived API sessions past theirs (${EVENTS_PER_SESSION} events each) and ${DUE_PLATFORM.toLocaleString('en-US')} platform-lane sessions whose ${ITEMS_PER_PLATFORM} items each are past theirs (${JOURNALED} of each kind with a journal run on nats-server); meanwhile ${CLAIMERS} claimers drain a live lane that an enqueuer keeps filling (${enqueued.toLocaleString('en-US')} items)`,
      faults: `${HOUSEKEEPERS} housekeepers running runOnce back to back at once, as overlapping cron triggers; then the emptied platform sessions moved a retention into the past and the three run again while the platform enqueues into ${returning.length} of them; then the purges' grace moved into the past`,
      result:
        `deleted ${sum(runs, 'deletedWorkItems').toLocaleString('en-US')} items, ${sum(runs, 'deletedSessions').toLocaleString('en-US')} sessions and ${sum(runs, 'deletedEvents').toLocaleString('en-US')} events, each once, in ${runs.length} runs ` +
        `(largest ${Math.max(...runs.map((r) => r.deletedWorkItems)).toLocaleString('en-US')} items, bound ${RUN_BOUND.toLocaleString('en-US')}; slowest ${Math.max(...runMs).toFixed(0)} ms) over ${retentionS.toFixed(1)} s; ` +
        `nothing younger and no live item touched; the live lane completed ${completedDuring.toLocaleString('en-US')} items meanwhile, each handed out once (claim or complete-and-claim p50 ${p(0.5)} ms, p99 ${p(0.99)} ms); ` +
        `then ${deletedPlatform.toLocaleString('en-US')} emptied platform sessions deleted once each in ${platformRuns.length} runs over ${platformS.toFixed(1)} s, ${revived} kept because the platform's enqueue came first and the other ${returning.length - revived} it came back to bound anew, every returning item kept; ` +
        `${dueRuns.toLocaleString('en-US')} journal runs purged in ${purgeS.toFixed(1)} s, live and returning journals whole; seeding ${seededS.toFixed(1)} s`,
    });
  }, 600_000);
});
