/**
 * Backlog growth: claim+complete at concurrency 8 from a 100k backlog against a 10k one.
 * A queue whose claim walks past dead or unavailable rows gets slower as it fills; this
 * one's claim reads the partial index's first live entry, so the cost should stay flat.
 * pgbench runs the same statements at both sizes for the database's own slope.
 */
import pg from 'pg';
import { connectPg } from '../../src/db/drivers/node-pg.js';
import { claimCompleteScript, pgbench } from '../anchors/pgbench.js';
import { resetLeasehold, seedClaimBacklog } from '../lib/db.js';
import type { BenchContext, Scenario } from '../lib/harness.js';
import { drainLeasehold, warm } from '../lib/leasehold-drain.js';

const CONCURRENCY = 8;
const TTL_MS = 60_000;

export function scenarios(ctx: BenchContext): Scenario[] {
  const small = ctx.smoke ? 2_000 : 10_000;
  const large = ctx.smoke ? 20_000 : 100_000;
  const count = ctx.smoke ? 400 : 4_000;
  let admin: pg.Pool;
  let conn: ReturnType<typeof connectPg>;
  let script: string;
  const leasehold = (backlog: number) => async () => {
    await resetLeasehold(admin);
    await seedClaimBacklog(admin, backlog);
    return { items_per_s: await drainLeasehold(conn.db, { concurrency: CONCURRENCY, count }) };
  };
  const bench = (backlog: number) => async () => {
    await resetLeasehold(admin);
    await seedClaimBacklog(admin, backlog);
    const per = Math.floor(count / CONCURRENCY);
    return { items_per_s: (await pgbench(ctx.databaseUrl, script, CONCURRENCY, per)).tps };
  };
  return [
    {
      name: 'backlog_growth',
      description: `claim+complete of ${count.toLocaleString('en-US')} items at concurrency ${CONCURRENCY} from a ${small.toLocaleString('en-US')} and a ${large.toLocaleString('en-US')} backlog`,
      async setup() {
        admin = new pg.Pool({ connectionString: ctx.databaseUrl, max: 2 });
        conn = connectPg(ctx.databaseUrl, { max: CONCURRENCY });
        await warm(conn.pool, CONCURRENCY);
        script = await claimCompleteScript('model_turn', TTL_MS);
      },
      async teardown() {
        await conn?.close();
        await admin?.end();
      },
      subjects: {
        leasehold_10k: leasehold(small),
        leasehold_100k: leasehold(large),
        pgbench_10k: bench(small),
        pgbench_100k: bench(large),
      },
      ratios: [
        {
          name: 'claim_100k_vs_10k',
          numerator: 'leasehold_100k',
          denominator: 'leasehold_10k',
          metric: 'items_per_s',
          goal: { op: '>=', value: 0.9 },
        },
        {
          name: 'pgbench_100k_vs_10k',
          numerator: 'pgbench_100k',
          denominator: 'pgbench_10k',
          metric: 'items_per_s',
        },
        {
          name: 'claim_100k_vs_pgbench',
          numerator: 'leasehold_100k',
          denominator: 'pgbench_100k',
          metric: 'items_per_s',
        },
      ],
    },
  ];
}
