/**
 * A flood of long polls does not starve claims (docs/guarantees.md). The real Node
 * server, with its pool of 10, holds a thousand long polls open on empty environments — each
 * poller re-polling the moment it is answered — while a platform-lane worker claims and
 * completes items over HTTP. Parked polls hold no connection, so claims must all succeed
 * and stay fast, and the server must never hold more connections than its pool (plus its one
 * LISTEN connection) or leave one idle in a transaction.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maybeRow } from '../../src/db/handle.js';
import { apiKey, environmentWithKey } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import { enqueueClaimItems } from '../helpers/factories.js';
import { atScale, FAULT_SCALE, recordFault } from '../helpers/faults.js';
import type { WireItem } from '../helpers/platform.js';
import { type RunningServer, startServer } from '../helpers/server.js';

const POOL_SIZE = 10;
/** The server's connections carry this name, so the test's own pool is not counted. */
const APP_NAME = 'leasehold_flood_server';
const POLLS = atScale(200, 1_000);
/** Under the per-key cap (64): the flood is admitted whole, so every poll really waits. */
const POLLS_PER_KEY = 50;
const CLAIMS = atScale(200, 300);
const BASELINE_CLAIMS = atScale(50, 200);
/**
 * Asserted at the fast scale only. Unflooded a claim takes a few milliseconds, and under 200
 * polls its p99 stays in the tens; under 1,000 — a thousand requests a second through the
 * same event loop — it has measured anywhere from 30 ms to over a second on the shared
 * 2-core machine, depending on what else runs there, so the full run records it instead.
 * Starvation proper is asserted at both scales: a claim that waited out the pool's acquire
 * timeout (3 s) would fail with 503, and none may.
 */
const CLAIM_P99_BOUND_MS = 1_000;
/** Room for 300 claims at the slowest pace measured (about 0.5 s each on a loaded machine). */
const TEST_TIMEOUT_MS = 240_000;

const t = useTestDb('pg');
let server: RunningServer;

beforeAll(async () => {
  server = await startServer({
    databaseUrl: t.url!,
    env: { LEASEHOLD_DB_POOL_SIZE: String(POOL_SIZE), PGAPPNAME: APP_NAME },
  });
});

afterAll(async () => {
  await server?.stop();
});

interface Connections {
  total: number;
  active: number;
  idleInTransaction: number;
}

/** The server's connections to the test database right now, by state. */
async function serverConnections(): Promise<Connections> {
  const row = await maybeRow<Connections>(
    t.db,
    sql`SELECT count(*)::int AS total,
               (count(*) FILTER (WHERE state = 'active'))::int AS active,
               (count(*) FILTER (WHERE state LIKE 'idle in transaction%'))::int AS "idleInTransaction"
          FROM pg_stat_activity
         WHERE datname = current_database() AND application_name = ${APP_NAME}`,
  );
  return row!;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const ms = (n: number) => `${n.toFixed(1)} ms`;

describe('a flood of long polls', () => {
  it(
    'does not starve claims: every claim succeeds, the server stays within its pool and leaves no transaction idle',
    async (ctx) => {
      const platformKey = await apiKey(t.db, 'platform');
      const pollerKeys = await Promise.all(
        Array.from({ length: POLLS / POLLS_PER_KEY }, () => environmentWithKey(t.db)),
      );
      const itemIds = await enqueueClaimItems(t.db, BASELINE_CLAIMS + CLAIMS, 'model_turn');

      const post = (path: string, body: unknown) =>
        fetch(`${server.baseURL}/v1/platform${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${platformKey}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      let flooding = true;
      const statuses = new Map<number, number>();
      let answered = 0;
      const peak: Connections = { total: 0, active: 0, idleInTransaction: 0 };
      const claimed: string[] = [];
      const claimAndComplete = async (n: number): Promise<number[]> => {
        const latencies: number[] = [];
        for (let i = 0; i < n; i++) {
          const sentAt = performance.now();
          const res = await post('/work/claim', { kind: 'model_turn', ttl_seconds: 60 });
          const text = await res.text();
          latencies.push(performance.now() - sentAt);
          expect(res.status, text).toBe(200);
          const item = JSON.parse(text) as WireItem | null;
          expect(item, 'a claim found the lane empty while items were queued').not.toBeNull();
          claimed.push(item!.id);
          const done = await post(`/work/${item!.id}/complete`, { lease: item!.lease });
          expect(done.status, await done.text()).toBe(204);
        }
        return latencies.sort((a, b) => a - b);
      };

      const baseline = await claimAndComplete(BASELINE_CLAIMS);

      // The flood: every poller long-polls its empty environment and polls again at once.
      const poller = async (environmentId: string, key: string) => {
        while (flooding) {
          const res = await fetch(
            `${server.baseURL}/v1/environments/${environmentId}/work/poll?block_ms=999`,
            {
              headers: { authorization: `Bearer ${key}` },
            },
          );
          await res.text();
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          answered++;
        }
      };
      const pollers = pollerKeys.flatMap((e) =>
        Array.from({ length: POLLS_PER_KEY }, () => poller(e.environmentId, e.key)),
      );
      // Claims start once the flood is in full swing: as many polls answered as there are pollers.
      while (answered < POLLS) await new Promise((r) => setTimeout(r, 20));

      let sampling = true;
      let samples = 0;
      const sampler = (async () => {
        while (sampling) {
          const now = await serverConnections();
          peak.total = Math.max(peak.total, now.total);
          peak.active = Math.max(peak.active, now.active);
          peak.idleInTransaction = Math.max(peak.idleInTransaction, now.idleInTransaction);
          samples++;
          await new Promise((r) => setTimeout(r, 25));
        }
      })();

      const answeredBefore = answered;
      const floodStart = performance.now();
      let flooded: number[];
      let pollRate: number;
      try {
        flooded = await claimAndComplete(CLAIMS);
        pollRate = (answered - answeredBefore) / ((performance.now() - floodStart) / 1_000);
      } finally {
        // Even when a claim fails, the pollers end before the server does.
        sampling = false;
        flooding = false;
        await Promise.allSettled([sampler, ...pollers]);
      }

      const p50 = percentile(flooded, 50);
      const p99 = percentile(flooded, 99);
      const max = flooded[flooded.length - 1]!;
      const unexpected = [...statuses].filter(([status]) => status !== 200);
      recordFault(ctx, {
        load:
          `${POLLS} concurrent long polls (block_ms 999, ${POLLS / POLLS_PER_KEY} keys × ${POLLS_PER_KEY}, ` +
          `re-polled at once) on empty environments; ${CLAIMS} claim+complete over HTTP; pool of ${POOL_SIZE}`,
        faults: 'long-poll flood (real Node server, loopback)',
        result:
          `${claimed.length - BASELINE_CLAIMS}/${CLAIMS} claims served; claim p50 ${ms(p50)}, p99 ${ms(p99)}, ` +
          `max ${ms(max)} (unflooded p50 ${ms(percentile(baseline, 50))}, p99 ${ms(percentile(baseline, 99))}); ` +
          `${Math.round(pollRate)} polls/s answered, non-200: ${unexpected.length ? JSON.stringify(unexpected) : 'none'}; ` +
          `server connections ≤ ${peak.total} (≤ ${peak.active} active), ${peak.idleInTransaction} idle in transaction ` +
          `(${samples} samples)`,
      });

      expect(new Set(claimed)).toEqual(new Set(itemIds));
      expect(unexpected).toEqual([]);
      // The pool, plus the one dedicated LISTEN connection that wakes long polls.
      expect(peak.total).toBeLessThanOrEqual(POOL_SIZE + 1);
      expect(peak.idleInTransaction).toBe(0);
      expect(samples).toBeGreaterThan(0);
      if (FAULT_SCALE === 'fast') expect(p99).toBeLessThan(CLAIM_P99_BOUND_MS);
    },
    TEST_TIMEOUT_MS,
  );
});
