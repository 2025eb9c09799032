/**
 * pg-boss's pickup: one worker (`work`, batch size 1) on an empty queue; a sample is the time
 * from just before `send` to the handler's first line. pg-boss 10 finds new jobs by polling
 * (every `pollingIntervalSeconds`, at least 0.5 s), so each send waits a random fraction of
 * the interval first: a job's arrival is independent of the poller's phase, as in service.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import PgBoss from 'pg-boss';

const QUEUE = 'bench_pickup';
const SCHEMA = 'pgboss_pickup';
/** pg-boss 10's smallest polling interval. */
export const PGBOSS_POLL_SECONDS = 0.5;

export interface PgBossPickup {
  sample(): Promise<number>;
  close(): Promise<void>;
}

export async function startPgBossPickup(databaseUrl: string): Promise<PgBossPickup> {
  const boss = new PgBoss({
    connectionString: databaseUrl,
    schema: SCHEMA,
    schedule: false,
    supervise: false,
  });
  boss.on('error', (err: Error) => console.warn(`[pg-boss] ${err.message}`));
  await boss.start();
  await boss.createQueue(QUEUE);
  let started: ((at: number) => void) | null = null;
  await boss.work(QUEUE, { pollingIntervalSeconds: PGBOSS_POLL_SECONDS, batchSize: 1 }, async () => {
    started?.(performance.now());
  });
  return {
    async sample() {
      await sleep(Math.random() * PGBOSS_POLL_SECONDS * 1000);
      const handled = new Promise<number>((resolve) => {
        started = resolve;
      });
      const t0 = performance.now();
      await boss.send(QUEUE, {});
      const at = await handled;
      started = null;
      return at - t0;
    },
    async close() {
      await boss.stop({ graceful: true, wait: true, timeout: 5_000 });
    },
  };
}
