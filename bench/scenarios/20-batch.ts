/**
 * Batch claim+complete draining a 10k backlog at concurrency 8: Leasehold's `claimMany`
 * (100 items per statement, each under its own lease) with `completeMany`, against
 * graphile-worker tuned for throughput (a local queue of 500; and that plus completions
 * batched within a tick, its best) and pg-boss fetching and completing 50 at a time.
 */
import { type DrainSubjects, openDrainSubjects } from '../lib/drain-subjects.js';
import type { BenchContext, Scenario } from '../lib/harness.js';
import { drainLeasehold } from '../lib/leasehold-drain.js';

const CONCURRENCY = 8;
const BATCH = 100;

export function scenarios(ctx: BenchContext): Scenario[] {
  const backlog = ctx.smoke ? 2_000 : 10_000;
  const count = ctx.smoke ? 1_000 : 8_000;
  let s: DrainSubjects;
  return [
    {
      name: 'batch_c8',
      description: `batch claim+complete of ${count.toLocaleString('en-US')} items from a ${backlog.toLocaleString('en-US')} backlog, concurrency ${CONCURRENCY}; Leasehold batches of ${BATCH}, graphile-worker local queue 500 (and, separately, with completions batched too), pg-boss batches of 50`,
      async setup() {
        s = await openDrainSubjects(ctx.databaseUrl, CONCURRENCY);
      },
      async teardown() {
        await s?.close();
      },
      subjects: {
        leasehold: async () => {
          await s.seed(backlog);
          return {
            items_per_s: await drainLeasehold(s.conn.db, { concurrency: CONCURRENCY, count, batch: BATCH }),
          };
        },
        graphile_tuned: async () => {
          await s.graphile.seed(backlog);
          return {
            items_per_s: await s.graphile.drain({ concurrency: CONCURRENCY, count, tuning: 'local_queue' }),
          };
        },
        graphile_tuned_batched: async () => {
          await s.graphile.seed(backlog);
          return {
            items_per_s: await s.graphile.drain({
              concurrency: CONCURRENCY,
              count,
              tuning: 'local_queue_batched',
            }),
          };
        },
        pgboss_batch50: async () => {
          await s.boss.seed(backlog);
          return { items_per_s: await s.boss.drain({ concurrency: CONCURRENCY, count, batchSize: 50 }) };
        },
      },
      ratios: [
        {
          name: 'batch_c8_vs_graphile_tuned',
          numerator: 'leasehold',
          denominator: 'graphile_tuned',
          metric: 'items_per_s',
          goal: { op: '>=', value: 1.2 },
        },
        {
          name: 'batch_c8_vs_graphile_tuned_batched',
          numerator: 'leasehold',
          denominator: 'graphile_tuned_batched',
          metric: 'items_per_s',
        },
        {
          name: 'batch_c8_vs_pgboss',
          numerator: 'leasehold',
          denominator: 'pgboss_batch50',
          metric: 'items_per_s',
        },
      ],
    },
  ];
}
