/**
 * graphile-worker as an anchor for draining a backlog: its own runner, a no-op task, the
 * concurrency asked for, tuned as its performance guide suggests for many fast jobs or not
 * at all (see `Tuning`).
 */
import { EventEmitter } from 'node:events';
import { Logger, makeWorkerUtils, run, type WorkerEvents, type WorkerUtils } from 'graphile-worker';
import pg from 'pg';

const TASK = 'bench_noop';

/**
 * `default`: as shipped. `local_queue`: a local queue of 500 (one fetch locks 500 jobs).
 * `local_queue_batched`: also batches completions made within the same tick into one call.
 */
export type Tuning = 'default' | 'local_queue' | 'local_queue_batched';

const TUNINGS = {
  local_queue: { localQueue: { size: 500 } },
  local_queue_batched: { localQueue: { size: 500 }, completeJobBatchDelay: 0 },
} as const;

export interface GraphileAnchor {
  /** Empties the job tables and queues `n` jobs, settled (VACUUM ANALYZE). */
  seed(n: number): Promise<void>;
  /** Runs a runner until `count` jobs have completed; items/s from its first worker to the last completion. */
  drain(options: { concurrency: number; count: number; tuning: Tuning }): Promise<number>;
  close(): Promise<void>;
}

export async function graphileAnchor(url: string): Promise<GraphileAnchor> {
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  pool.on('error', (err) => console.warn(`[graphile pool] ${err.message}`));
  const utils: WorkerUtils = await makeWorkerUtils({ pgPool: pool });
  await utils.migrate();
  const reset = async () => {
    await pool.query('TRUNCATE graphile_worker._private_jobs, graphile_worker._private_job_queues CASCADE');
  };
  return {
    async seed(n) {
      await reset();
      for (let done = 0; done < n; done += 1000) {
        const batch = Array.from({ length: Math.min(1000, n - done) }, () => ({
          identifier: TASK,
          payload: {},
        }));
        await utils.addJobs(batch);
      }
      await pool.query('VACUUM ANALYZE graphile_worker._private_jobs');
    },
    async drain({ concurrency, count, tuning }) {
      const events: WorkerEvents = new EventEmitter() as WorkerEvents;
      let completed = 0;
      let first = 0;
      let last = 0;
      const finished = new Promise<void>((resolve) => {
        // The clock starts when the first worker (or the local queue) exists, just before
        // the first fetch, so the runner's own start-up is not counted against it.
        const start = () => {
          if (!first) first = performance.now();
        };
        events.on('worker:create', start);
        events.on('localQueue:init', start);
        events.on('job:complete', () => {
          if (++completed === count) {
            last = performance.now();
            resolve();
          }
        });
      });
      const runner = await run({
        connectionString: url,
        concurrency,
        maxPoolSize: concurrency + 2,
        noHandleSignals: true,
        pollInterval: 1000,
        events,
        logger: quietLogger,
        taskList: { [TASK]: async () => {} },
        ...(tuning === 'default' ? {} : { preset: { worker: TUNINGS[tuning] } }),
      });
      await finished;
      await runner.stop();
      return count / ((last - first) / 1000);
    },
    async close() {
      await utils.release();
      await pool.end();
    },
  };
}

/** Warnings and errors only: the runner's per-job info lines would cost the anchor time. */
const quietLogger = new Logger(() => (level: string, message: string) => {
  if (level === 'error' || level === 'warning') console.warn(`[graphile] ${level}: ${message}`);
});
