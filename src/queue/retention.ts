/**
 * The queue's retention: work items stopped for longer than their retention are deleted by
 * housekeeping, in bounded batches (`batch` rows a statement, `maxBatches` statements a run;
 * the next run goes on) that are safe to overlap with themselves: rows are taken with SKIP
 * LOCKED, so two runs delete disjoint rows and their counts add up to what went. A session's
 * retention is `sessions/retention.ts`.
 */
import { DEFAULT_RETAIN_STOPPED_WORK_MS } from '../config.js';
import type { SqlHandle } from '../db/handle.js';
import { deleteStoppedWork } from './delete-stopped-work.js';
import { drain, type HousekeepingOptions } from './drain.js';

const DEFAULT_BATCH = 500;

/**
 * Deletes items stopped longer ago than the retention, in every environment; returns how many.
 * `sessions`, when given, collects the sessions whose items went (for the sessions' own
 * retention to find those left empty).
 */
export function retireStoppedWork(
  db: SqlHandle,
  options: HousekeepingOptions = {},
  sessions?: Set<string>,
): Promise<number> {
  const retainMs = options.retainStoppedWorkMs ?? DEFAULT_RETAIN_STOPPED_WORK_MS;
  const batch = options.batch ?? DEFAULT_BATCH;
  if (retainMs <= 0) return Promise.resolve(0);
  return drain('queue.delete_stopped_work', options, async () => {
    const { deleted, sessionIds } = await deleteStoppedWork(db, retainMs, batch);
    for (const id of sessionIds) sessions?.add(id);
    return { rows: deleted, more: deleted >= batch };
  });
}
