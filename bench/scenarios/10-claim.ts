/**
 * claim+complete draining a 10k backlog at concurrency 1, 8 and 32: Leasehold's claim lane
 * (`claim` then `complete`, and the worker loop `completeAndClaim` that does both in one
 * statement), pgbench running claim's and complete's very statements (the limit for two
 * statements per item) and the very statement `completeAndClaim` sends (the limit for the
 * worker loop), graphile-worker as shipped and pg-boss fetching one job at a time. Every
 * subject starts from a freshly seeded, vacuumed backlog and is timed over the same number
 * of items.
 */
import type pg from 'pg';
import { claimCompleteScript, completeAndClaimScript, LOOP_START, pgbench } from '../anchors/pgbench.js';
import { type DrainSubjects, openDrainSubjects } from '../lib/drain-subjects.js';
import type { BenchContext, Scenario } from '../lib/harness.js';
import { drainLeasehold } from '../lib/leasehold-drain.js';

const TTL_MS = 60_000;

export function scenarios(ctx: BenchContext): Scenario[] {
  const backlog = ctx.smoke ? 2_000 : 10_000;
  return [1, 8, 32].map((concurrency) => {
    // Enough items to time well, never more than half the backlog (it stays a backlog).
    const count = ctx.smoke ? 300 : concurrency === 1 ? 1_500 : 3_000;
    const bossCount = Math.max(100, Math.floor(count / 10));
    let s: DrainSubjects;
    let script: string;
    let loopScript: string;
    return {
      name: `claim_c${concurrency}`,
      description: `claim+complete of ${count.toLocaleString('en-US')} items (pg-boss ${bossCount.toLocaleString('en-US')}) from a ${backlog.toLocaleString('en-US')} backlog, concurrency ${concurrency}`,
      // pg-boss runs at a tenth of the others' rate, so a round of it costs as much as all the
      // others together; its ratios are context with no goal: the first round's is the figure.
      once: ['pgboss'],
      // At 8, where the goals are, a round lasts 1-2 s and pgbench's own loop ranged
      // 2,600-4,166 items/s across the three rounds of one run: seven rounds, their order
      // alternating (each subject drains its own freshly seeded backlog), so one slow stretch
      // of the machine cannot decide the median. Not at 32: there graphile-worker right after
      // pg-boss found pg-boss's connections still open and PostgreSQL out of them.
      rounds: concurrency === 8 ? 7 : 3,
      alternate: concurrency === 8,
      async setup() {
        s = await openDrainSubjects(ctx.databaseUrl, concurrency);
        script = await claimCompleteScript('model_turn', TTL_MS);
        loopScript = await completeAndClaimScript('model_turn', TTL_MS);
      },
      async teardown() {
        await s?.close();
      },
      subjects: {
        leasehold: async () => {
          await s.seed(backlog);
          return { items_per_s: await drainLeasehold(s.conn.db, { concurrency, count }) };
        },
        leasehold_loop: async () => {
          await s.seed(backlog);
          return { items_per_s: await drainLeasehold(s.conn.db, { concurrency, count, loop: true }) };
        },
        pgbench: async () => {
          await s.seed(backlog);
          const per = Math.floor(count / concurrency);
          return { items_per_s: (await pgbench(ctx.databaseUrl, script, concurrency, per)).tps };
        },
        pgbench_loop: async () => {
          await s.seed(backlog);
          const per = Math.floor(count / concurrency);
          const { tps } = await pgbench(ctx.databaseUrl, loopScript, concurrency, per, LOOP_START);
          // Each client's first step only claims and its last claim stays held: all others complete.
          await expectStopped(s.conn.pool, concurrency * (per - 1));
          return { items_per_s: tps };
        },
        graphile: async () => {
          await s.graphile.seed(backlog);
          return { items_per_s: await s.graphile.drain({ concurrency, count, tuning: 'default' }) };
        },
        pgboss: async () => {
          await s.boss.seed(backlog);
          // A tenth of the items: at ≈ 1/10 of the others' rate it still takes as long as they do.
          return { items_per_s: await s.boss.drain({ concurrency, count: bossCount, batchSize: 1 }) };
        },
      },
      ratios: [
        {
          name: `claim_c${concurrency}_vs_pgbench`,
          numerator: 'leasehold',
          denominator: 'pgbench',
          metric: 'items_per_s',
          ...(concurrency === 8 ? { goal: { op: '>=', value: 0.9 } as const } : {}),
        },
        {
          name: `claim_c${concurrency}_vs_graphile`,
          numerator: 'leasehold',
          denominator: 'graphile',
          metric: 'items_per_s',
          ...(concurrency === 8 ? { goal: { op: '>=', value: 1.8 } as const } : {}),
        },
        {
          name: `claim_c${concurrency}_vs_pgboss`,
          numerator: 'leasehold',
          denominator: 'pgboss',
          metric: 'items_per_s',
        },
        // The worker loop against its own limit: pgbench sending the loop's one statement.
        {
          name: `loop_c${concurrency}_vs_pgbench_loop`,
          numerator: 'leasehold_loop',
          denominator: 'pgbench_loop',
          metric: 'items_per_s',
          ...(concurrency === 8 ? { goal: { op: '>=', value: 0.8 } as const } : {}),
        },
        // And against the two-statement anchors: one statement per item where they run two.
        {
          name: `loop_c${concurrency}_vs_pgbench`,
          numerator: 'leasehold_loop',
          denominator: 'pgbench',
          metric: 'items_per_s',
        },
        {
          name: `loop_c${concurrency}_vs_graphile`,
          numerator: 'leasehold_loop',
          denominator: 'graphile',
          metric: 'items_per_s',
          ...(concurrency === 8 ? { goal: { op: '>=', value: 1.5 } as const } : {}),
        },
      ],
    };
  });
}

/** Fails the run unless exactly `n` items were completed: an anchor that skipped its writes would run fast. */
async function expectStopped(pool: pg.Pool, n: number): Promise<void> {
  const { rows } = await pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM work_items WHERE state = 'stopped'",
  );
  if (rows[0]!.n !== n) throw new Error(`pgbench's worker loop completed ${rows[0]!.n} items, not ${n}`);
}
