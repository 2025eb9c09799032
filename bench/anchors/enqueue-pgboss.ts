/**
 * pg-boss's enqueue: `send` per job, `insert` per batch, into a queue created beforehand (pg-boss
 * 10 refuses jobs for a queue that does not exist). Started without supervision or cron, so no
 * maintenance query runs beside the timed sends; no worker consumes the jobs. One connection,
 * like the other subjects.
 */
import PgBoss from 'pg-boss';

const QUEUE = 'bench_enqueue';
/** Its own schema, so this scenario never touches another scenario's jobs. */
const SCHEMA = 'pgboss_enqueue';

export interface PgBossEnqueue {
  /** `n` jobs, each `send` awaited before the next. */
  sendOneByOne(n: number, data: (i: number) => object): Promise<void>;
  /** `n` jobs in `insert` calls of `batch`, each awaited before the next. */
  insertInBatches(n: number, batch: number, data: (i: number) => object): Promise<void>;
  /** Empties the job table (setup, outside the timed part); the queue stays. */
  reset(): Promise<void>;
  /** Jobs in the queue, to check that every send and insert landed. */
  count(): Promise<number>;
  close(): Promise<void>;
}

export async function openPgBossEnqueue(databaseUrl: string): Promise<PgBossEnqueue> {
  const boss = new PgBoss({
    connectionString: databaseUrl,
    schema: SCHEMA,
    max: 1,
    schedule: false,
    supervise: false,
  });
  boss.on('error', (err: Error) => console.warn(`[pg-boss] ${err.message}`));
  await boss.start();
  await boss.createQueue(QUEUE);
  const db = boss.getDb();
  return {
    async sendOneByOne(n, data) {
      for (let i = 0; i < n; i++) {
        if ((await boss.send(QUEUE, data(i))) === null) throw new Error('pg-boss send created no job');
      }
    },
    async insertInBatches(n, batch, data) {
      for (let from = 0; from < n; from += batch) {
        // `insert` resolves to nothing useful (its statement returns no rows): checked by count().
        await boss.insert(
          Array.from({ length: Math.min(batch, n - from) }, (_, k) => ({
            name: QUEUE,
            data: data(from + k),
          })),
        );
      }
    },
    async reset() {
      // The parent of the per-queue partitions: TRUNCATE empties them all.
      await db.executeSql(`TRUNCATE ${SCHEMA}.job`, []);
    },
    async count() {
      const { rows } = await db.executeSql(`SELECT count(*)::int AS n FROM ${SCHEMA}.job WHERE name = $1`, [
        QUEUE,
      ]);
      return (rows[0] as { n: number }).n;
    },
    close: () => boss.stop({ graceful: false, wait: true, timeout: 5_000 }),
  };
}
