/**
 * graphile-worker's pickup: a runner (concurrency 1) idles on an empty queue, woken by its
 * LISTEN connection when `addJob` inserts; a sample is the time from just before `addJob` to
 * the task handler's first line. Before each sample the worker has looked for a job and found
 * none (`worker:getJob:empty`), so every pickup goes through the notification.
 */
import { EventEmitter } from 'node:events';
import { Logger, type Runner, run, type WorkerEvents } from 'graphile-worker';

const TASK = 'bench_pickup';
const SCHEMA = 'graphile_worker';

export interface GraphilePickup {
  sample(): Promise<number>;
  close(): Promise<void>;
}

/** Errors and warnings only: the info line per completed job would flood the bench's output. */
const quiet = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning') console.warn(`[graphile] ${level}: ${message}`);
});

export async function startGraphilePickup(databaseUrl: string): Promise<GraphilePickup> {
  let started: ((at: number) => void) | null = null;
  let idle: (() => void) | null = null;
  let isIdle = false;
  const events: WorkerEvents = new EventEmitter();
  events.on('worker:getJob:empty', () => {
    isIdle = true;
    idle?.();
  });
  events.on('worker:getJob:start', () => {
    isIdle = false;
  });
  const untilIdle = () =>
    isIdle
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          idle = () => {
            idle = null;
            resolve();
          };
        });
  const runner: Runner = await run({
    connectionString: databaseUrl,
    schema: SCHEMA,
    concurrency: 1,
    noHandleSignals: true,
    logger: quiet,
    events,
    taskList: {
      [TASK]: async () => {
        started?.(performance.now());
      },
    },
  });
  let seq = 0;
  return {
    async sample() {
      await untilIdle();
      const handled = new Promise<number>((resolve) => {
        started = resolve;
      });
      const t0 = performance.now();
      await runner.addJob(TASK, { seq: ++seq });
      const at = await handled;
      started = null;
      return at - t0;
    },
    async close() {
      await runner.stop();
    },
  };
}
