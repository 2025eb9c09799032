/**
 * Backlog growth: claim+complete at concurrency 8 from a 100k and a 1,000,000 backlog against
 * a 10k one. A queue whose claim walks past dead or unavailable rows gets slower as it fills;
 * this one's claim reads the partial index's first live entry, so the cost should stay flat.
 * pgbench runs the same statements at every size for the database's own slope.
 *
 * The 10k backlog is seeded afresh for every measurement. The 100k and the million are built
 * once each, in databases of their own beside the bench's (the million takes about half a
 * minute), and before each measurement the items the last one took are put back as they were
 * and the table vacuumed (`restoreClaimBacklog`): reseeding 100k items six times cost more
 * than the drains it prepared. Smoke runs stand a 30k backlog in for the million.
 */
import pg from 'pg';
import { connectPg, type PgConnection } from '../../src/db/drivers/node-pg.js';
import { claimCompleteScript, pgbench } from '../anchors/pgbench.js';
import {
  dropSideDatabase,
  prepareSideDatabase,
  resetLeasehold,
  restoreClaimBacklog,
  seedClaimBacklog,
} from '../lib/db.js';
import type { BenchContext, Scenario } from '../lib/harness.js';
import { drainLeasehold, warm } from '../lib/leasehold-drain.js';

const CONCURRENCY = 8;
const TTL_MS = 60_000;
/** The side databases' suffixes: `<bench database>_backlog`, `<bench database>_backlog_large`. */
const SIDE = 'backlog';
const SIDE_LARGE = 'backlog_large';

/** A database, Leasehold's pool on it and an administrator's pool for seeding. */
interface Backlog {
  url: string;
  admin: pg.Pool;
  conn: PgConnection;
}

async function open(url: string): Promise<Backlog> {
  const admin = new pg.Pool({ connectionString: url, max: 2 });
  // pool.end() resolves before its sockets close: dropping the side database right after
  // terminates them, which must not be an unhandled error.
  admin.on('error', () => {});
  const conn = connectPg(url, { max: CONCURRENCY });
  await warm(conn.pool, CONCURRENCY);
  return { url, admin, conn };
}

async function close(b: Backlog | undefined): Promise<void> {
  await b?.conn.close();
  await b?.admin.end();
}

export function scenarios(ctx: BenchContext): Scenario[] {
  const small = ctx.smoke ? 2_000 : 10_000;
  const large = ctx.smoke ? 20_000 : 100_000;
  const huge = ctx.smoke ? 30_000 : 1_000_000;
  const count = ctx.smoke ? 400 : 3_000;
  let main: Backlog | undefined;
  let side: Backlog | undefined;
  let sideLarge: Backlog | undefined;
  let script: string;
  /**
   * Seeds `n` items afresh in the bench database, or readies a side database's larger backlog.
   * Either way a checkpoint follows: a fresh seed leaves far more dirty pages than a restore,
   * and flushing them must not fall into one subject's timing and not another's.
   */
  const ready = async (n: number): Promise<Backlog> => {
    const b = n === huge ? side! : n === large ? sideLarge! : main!;
    if (b !== main) await restoreClaimBacklog(b.admin);
    else {
      await resetLeasehold(b.admin);
      await seedClaimBacklog(b.admin, n);
    }
    await b.admin.query('CHECKPOINT');
    return b;
  };
  const leasehold = (backlog: number) => async () => {
    const b = await ready(backlog);
    return { items_per_s: await drainLeasehold(b.conn.db, { concurrency: CONCURRENCY, count }) };
  };
  const bench = (backlog: number) => async () => {
    const b = await ready(backlog);
    const per = Math.floor(count / CONCURRENCY);
    return { items_per_s: (await pgbench(b.url, script, CONCURRENCY, per)).tps };
  };
  const label = (n: number) => n.toLocaleString('en-US');
  return [
    {
      name: 'backlog_growth',
      description: `claim+complete of ${label(count)} items at concurrency ${CONCURRENCY} from a ${label(small)}, a ${label(large)} and a ${label(huge)} backlog`,
      // Five rounds, the fewest that give a median an interval (the lowest round to the highest,
      // at 94 %); every subject readies its own backlog and checkpoints, so the order alternates.
      rounds: 5,
      alternate: true,
      async setup() {
        const started = performance.now();
        try {
          script = await claimCompleteScript('model_turn', TTL_MS);
          main = await open(ctx.databaseUrl);
          side = await open(await prepareSideDatabase(SIDE));
          await seedClaimBacklog(side.admin, huge);
          sideLarge = await open(await prepareSideDatabase(SIDE_LARGE));
          await seedClaimBacklog(sideLarge.admin, large);
        } catch (err) {
          // The harness tears down only what set up: undo what this one did.
          await this.teardown?.();
          throw err;
        }
        ctx.log(
          `backlog_growth: ${label(huge)} and ${label(large)} backlogs built in ${((performance.now() - started) / 1000).toFixed(1)} s`,
        );
      },
      async teardown() {
        await close(main);
        await close(side);
        await close(sideLarge);
        main = undefined;
        side = undefined;
        sideLarge = undefined;
        // Half a gigabyte at full size: not left behind.
        await dropSideDatabase(SIDE);
        await dropSideDatabase(SIDE_LARGE);
      },
      subjects: {
        leasehold_10k: leasehold(small),
        leasehold_100k: leasehold(large),
        leasehold_1m: leasehold(huge),
        pgbench_10k: bench(small),
        pgbench_100k: bench(large),
        pgbench_1m: bench(huge),
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
          name: 'claim_1m_vs_10k',
          numerator: 'leasehold_1m',
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
          name: 'pgbench_1m_vs_10k',
          numerator: 'pgbench_1m',
          denominator: 'pgbench_10k',
          metric: 'items_per_s',
        },
        {
          name: 'claim_100k_vs_pgbench',
          numerator: 'leasehold_100k',
          denominator: 'pgbench_100k',
          metric: 'items_per_s',
        },
        {
          name: 'claim_1m_vs_pgbench',
          numerator: 'leasehold_1m',
          denominator: 'pgbench_1m',
          metric: 'items_per_s',
        },
      ],
    },
  ];
}
