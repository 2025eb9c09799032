/**
 * graphile-worker's enqueue, as its own docs recommend for a long-lived process: one
 * `makeWorkerUtils` (which migrates its schema on creation) and then `addJob` per job or
 * `addJobs` per batch. No runner is started: nothing consumes the jobs while they are timed.
 * The pool has one connection, like the other subjects, so every figure is one client's.
 */
import { Logger, makeWorkerUtils, type WorkerUtils } from 'graphile-worker';

const TASK = 'bench_enqueue';
/** Its own schema, so this scenario never touches another scenario's jobs. */
const SCHEMA = 'graphile_enqueue';

const quiet = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning') console.warn(`[graphile] ${level}: ${message}`);
});

export interface GraphileEnqueue {
  /** `n` jobs, each `addJob` awaited before the next. */
  addOneByOne(n: number, payload: (i: number) => object): Promise<void>;
  /** `n` jobs in `addJobs` calls of `batch`, each awaited before the next. */
  addInBatches(n: number, batch: number, payload: (i: number) => object): Promise<void>;
  /** Empties the job table (setup, outside the timed part). */
  reset(): Promise<void>;
  /** Jobs in the table, to check that every add landed. */
  count(): Promise<number>;
  close(): Promise<void>;
}

export async function openGraphileEnqueue(databaseUrl: string): Promise<GraphileEnqueue> {
  const utils: WorkerUtils = await makeWorkerUtils({
    connectionString: databaseUrl,
    maxPoolSize: 1,
    schema: SCHEMA,
    logger: quiet,
  });
  return {
    async addOneByOne(n, payload) {
      for (let i = 0; i < n; i++) await utils.addJob(TASK, payload(i));
    },
    async addInBatches(n, batch, payload) {
      for (let from = 0; from < n; from += batch) {
        const specs = Array.from({ length: Math.min(batch, n - from) }, (_, k) => ({
          identifier: TASK,
          payload: payload(from + k),
        }));
        const jobs = await utils.addJobs(specs);
        if (jobs.length !== specs.length) throw new Error(`addJobs added ${jobs.length} of ${specs.length}`);
      }
    },
    async reset() {
      await utils.withPgClient((client) => client.query(`TRUNCATE ${SCHEMA}._private_jobs`));
    },
    async count() {
      const { rows } = await utils.withPgClient((client) =>
        client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${SCHEMA}._private_jobs`),
      );
      return rows[0]!.n;
    },
    async close() {
      await utils.release();
    },
  };
}
