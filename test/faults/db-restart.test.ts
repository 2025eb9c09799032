/**
 * PostgreSQL crashing under load (docs/guarantees.md): the Node server runs on a private cluster
 * that the test crashes (`pg_ctl stop -m immediate`: no checkpoint, every client cut) and
 * restarts three times while platform-lane workers claim and complete over HTTP and an
 * enqueuer adds work. Afterwards an audit in plain SQL checks what the clients were told.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectPg, type PgConnection } from '../../src/db/drivers/node-pg.js';
import { apiKey } from '../helpers/api.js';
import { createEnvironment, seedClaimBacklog } from '../helpers/factories.js';
import { atScale, recordFault } from '../helpers/faults.js';
import { type PrivatePostgres, startPrivatePostgres } from '../helpers/private-postgres.js';
import { type RunningServer, startServer } from '../helpers/server.js';

const RESTARTS = 3;
/** Rounds of pg_terminate_backend on every server connection, after the restarts. */
const TERMINATIONS = 3;
const WORKERS = atScale(4, 16);
const BACKLOG = atScale(1_500, 5_000);
/** Longer than the test: any item handed out twice was in two holders' hands. */
const TTL_SECONDS = 600;
/** The outage each crash leaves before the restart: long enough for every worker to notice. */
const OUTAGE_MS = 1_500;
/** A request may not take longer than the pool's acquire timeout (3 s) and some slack. */
const MAX_ANSWER_MS = 4_500;
const RECOVERY_BOUND_MS = 5_000;

interface Outcome {
  status: number;
  sentAt: number;
  answeredAt: number;
  retryAfter: string | null;
  envelope: boolean;
}

let cluster: PrivatePostgres;
let server: RunningServer;
let conn: PgConnection;
let platformKey: string;

beforeAll(async () => {
  cluster = await startPrivatePostgres();
  const url = await cluster.createDatabase('leasehold');
  server = await startServer({ databaseUrl: url });
  // Named, so terminating the server's backends leaves the audit's own connections alone.
  conn = connectPg(`${url}?application_name=audit`, { max: 2 });
  platformKey = await apiKey(conn.db, 'platform');
}, 120_000);

afterAll(async () => {
  await conn?.close();
  await server?.stop();
  await cluster?.destroy();
});

describe('PostgreSQL crashed and restarted under load', () => {
  it('loses no acknowledged completion or enqueue, hands no item to two holders, answers 503 while away and recovers within 5 s', async (ctx) => {
    const envId = await seedClaimBacklog(conn.db, BACKLOG, 'model_turn');
    const enqueueEnv = await createEnvironment(conn.db, 'cloud');
    const outcomes: Outcome[] = [];
    /** Windows in which the database was certainly down: from its stop returning to its start beginning. */
    const outages: Array<{ from: number; to: number }> = [];

    const call = async (path: string, body: unknown): Promise<{ res: Response | null; text: string }> => {
      const started = performance.now();
      let res: Response | null = null;
      let text = '';
      try {
        res = await fetch(`${server.baseURL}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${platformKey}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(15_000),
        });
        text = await res.text();
      } catch {
        // A refused or timed-out request counts as a hang below (status 0).
      }
      outcomes.push({
        status: res?.status ?? 0,
        sentAt: started,
        answeredAt: performance.now(),
        retryAfter: res?.headers.get('retry-after') ?? null,
        envelope: isEnvelope(text),
      });
      return { res, text };
    };

    const claimed = new Map<string, number>();
    const acked = new Set<string>();
    const ambiguous = new Set<string>();
    const enqueued = new Set<string>();
    let stopLoad = false;
    let lastOkAt = 0;

    const worker = async () => {
      while (!stopLoad) {
        const { res, text } = await call('/v1/platform/work/claim', {
          kind: 'model_turn',
          ttl_seconds: TTL_SECONDS,
        });
        if (res?.status !== 200) continue;
        lastOkAt = performance.now();
        const item = JSON.parse(text) as { id: string; lease: string } | null;
        if (!item) {
          await delay(10);
          continue;
        }
        claimed.set(item.id, (claimed.get(item.id) ?? 0) + 1);
        // Retry a completion the database may not have seen: a 409 after a 503 means an
        // earlier attempt did commit (the audit settles it), so it is ambiguous, not refused.
        for (let attempt = 0; !stopLoad; attempt++) {
          const done = await call(`/v1/platform/work/${item.id}/complete`, { lease: item.lease });
          if (done.res?.status === 204) {
            lastOkAt = performance.now();
            acked.add(item.id);
            break;
          }
          if (done.res?.status === 409 && attempt > 0) {
            ambiguous.add(item.id);
            break;
          }
          if (done.res?.status !== 503)
            throw new Error(`complete answered ${done.res?.status}: ${done.text}`);
        }
      }
    };
    let n = 0;
    const enqueuer = async () => {
      while (!stopLoad) {
        const sessionId = `sesn_fault_${++n}`;
        const { res, text } = await call('/v1/platform/work', {
          environment_id: enqueueEnv,
          session_id: sessionId,
          kind: 'model_turn',
        });
        if (res?.status === 201) enqueued.add((JSON.parse(text) as { work: { id: string } }).work.id);
      }
    };

    const load = [...Array.from({ length: WORKERS }, worker), enqueuer()];
    const recoveries: number[] = [];
    for (let i = 0; i < RESTARTS; i++) {
      const before = acked.size;
      await until(() => acked.size >= before + 50 || stopLoad, 30_000);
      await cluster.stop('immediate');
      const from = performance.now();
      await delay(OUTAGE_MS);
      outages.push({ from, to: performance.now() });
      await cluster.start();
      const back = performance.now();
      await until(() => lastOkAt > back, RECOVERY_BOUND_MS * 2);
      recoveries.push(lastOkAt - back);
    }
    // Then every server connection cut from under it (what a failover or a pooler restart does).
    let terminated = 0;
    for (let i = 0; i < TERMINATIONS; i++) {
      const before = acked.size;
      await until(() => acked.size >= before + 50, 30_000);
      const cut = await conn.db.execute<{ n: number }>(
        sql`SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid()
               AND application_name IS DISTINCT FROM 'audit'`,
      );
      terminated += cut.rows[0]!.n;
    }
    const final = acked.size;
    await until(() => acked.size >= final + 100, 30_000);
    stopLoad = true;
    await Promise.all(load);

    // The audit, in plain SQL on the database the server wrote.
    const rows = await conn.db.execute<{ id: string; state: string; claims: number }>(
      sql`SELECT id, state, claims FROM work_items WHERE environment_id IN (${envId}, ${enqueueEnv})`,
    );
    const byId = new Map(rows.rows.map((r) => [r.id, r]));
    const lostCompletions = [...acked].filter((id) => byId.get(id)?.state !== 'stopped');
    const lostEnqueues = [...enqueued].filter((id) => !byId.has(id));
    const twoHolders = [...claimed].filter(([, times]) => times > 1).map(([id]) => id);
    const recovered = [...ambiguous].filter((id) => byId.get(id)?.state === 'stopped');

    const during = outcomes.filter((o) => outages.some((w) => o.sentAt >= w.from && o.answeredAt <= w.to));
    const duringBad = during.filter((o) => o.status !== 503 || o.retryAfter === null || !o.envelope);
    const fiveHundreds = outcomes.filter((o) => o.status === 500 || o.status === 0);
    const slowest = Math.max(...outcomes.map((o) => o.answeredAt - o.sentAt));

    recordFault(ctx, {
      load: `${BACKLOG.toLocaleString('en')} items, ${WORKERS} HTTP claim/complete workers + 1 enqueuer`,
      faults:
        `PostgreSQL crashed (immediate stop) ${RESTARTS}×, ${OUTAGE_MS} ms down each; ` +
        `then every server connection terminated ${TERMINATIONS}× (${terminated} backends)`,
      result:
        `${acked.size} completions acknowledged, 0 lost of them (${lostCompletions.length}); ` +
        `${enqueued.size} enqueues acknowledged, ${lostEnqueues.length} lost; ` +
        `${twoHolders.length} items handed out twice; ${ambiguous.size} ambiguous completions (${recovered.length} had committed); ` +
        `${during.length} requests while down: all 503 + retry-after (${duringBad.length} not); ` +
        `recovery ${recoveries.map((r) => `${Math.round(r)} ms`).join(', ')}; slowest answer ${Math.round(slowest)} ms`,
    });

    // Nothing vanished: the backlog and every acknowledged enqueue are still rows.
    expect(rows.rows.length).toBeGreaterThanOrEqual(BACKLOG + enqueued.size);
    expect(lostCompletions).toEqual([]);
    expect(lostEnqueues).toEqual([]);
    expect(twoHolders).toEqual([]);
    expect(during.length).toBeGreaterThan(0);
    expect(terminated).toBeGreaterThan(0);
    expect(duringBad.slice(0, 5)).toEqual([]);
    expect(fiveHundreds.length).toBe(0);
    expect(slowest).toBeLessThan(MAX_ANSWER_MS);
    for (const r of recoveries) expect(r).toBeLessThan(RECOVERY_BOUND_MS);
    // The server rode it out: it is still up and said nothing about unhandled errors.
    expect(server.output()).not.toMatch(/unhandled|uncaught/i);
    const health = await fetch(`${server.baseURL}/v1/platform/work/claim`, {
      method: 'POST',
      headers: { authorization: `Bearer ${platformKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'model_turn', ttl_seconds: 1 }),
    });
    expect(health.status).toBe(200);
  });
});

function isEnvelope(text: string): boolean {
  try {
    const body = JSON.parse(text) as { type?: unknown; error?: { type?: unknown; message?: unknown } };
    return (
      body.type === 'error' && typeof body.error?.type === 'string' && typeof body.error.message === 'string'
    );
  } catch {
    return false;
  }
}

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await delay(20);
  }
}
