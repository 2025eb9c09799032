/**
 * pg-boss as an anchor for draining a backlog at its best: `concurrency` loops of `fetch`
 * (`batchSize` jobs per round trip) and one `complete` for what was fetched. Its `work()`
 * loop would be no measure of the database work: pg-boss 10 waits out the polling interval
 * (0.5 s at least) after every fetch, so eight workers take about 16 jobs/s at batch 1.
 */

import pg from 'pg';
import PgBoss from 'pg-boss';

const QUEUE = 'bench_drain';

export interface PgBossAnchor {
  boss: PgBoss;
  seed(n: number): Promise<void>;
  /** Items/s over `count` jobs fetched and completed. */
  drain(options: { concurrency: number; count: number; batchSize: number }): Promise<number>;
  close(): Promise<void>;
}

export async function pgBossAnchor(url: string): Promise<PgBossAnchor> {
  // Idle connections go within a second: the claim scenario keeps Leasehold's pool and runs
  // graphile-worker's beside this one, and at 32 loops pg-boss's idle 32 (pg's default 10 s)
  // put the three over PostgreSQL's 100 connections in the next round. pg-boss hands its
  // whole configuration to pg.Pool, though its type does not list the pool's settings.
  const config = {
    connectionString: url,
    max: 40,
    idleTimeoutMillis: 1_000,
    schedule: false,
    supervise: false,
  };
  const boss = new PgBoss(config);
  boss.on('error', (err) => console.warn(`[pg-boss] ${err.message}`));
  await boss.start();
  await boss.createQueue(QUEUE);
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  return {
    boss,
    async seed(n) {
      await pool.query('TRUNCATE pgboss.job');
      for (let done = 0; done < n; done += 1000) {
        const batch = Array.from({ length: Math.min(1000, n - done) }, () => ({ name: QUEUE, data: {} }));
        await boss.insert(batch);
      }
      await pool.query('VACUUM ANALYZE pgboss.job');
    },
    async drain({ concurrency, count, batchSize }) {
      let taken = 0;
      let handled = 0;
      const started = performance.now();
      const loop = async () => {
        for (;;) {
          const want = Math.min(batchSize, count - taken);
          if (want <= 0) return;
          taken += want;
          const jobs = await boss.fetch(QUEUE, { batchSize: want });
          if (jobs.length < want) throw new Error(`pg-boss ran dry after ${handled} jobs`);
          await boss.complete(
            QUEUE,
            jobs.map((j) => j.id),
          );
          handled += jobs.length;
        }
      };
      await Promise.all(Array.from({ length: concurrency }, loop));
      return handled / ((performance.now() - started) / 1000);
    },
    async close() {
      await boss.stop({ graceful: false, wait: true });
      await pool.end();
    },
  };
}
