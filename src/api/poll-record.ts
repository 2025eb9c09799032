/**
 * How often a poll writes its worker's row. `workers_polling` counts the workers seen in the
 * last 30 s (`WORKERS_POLLING_WINDOW_MS`); a worker polls many times a second when busy, and
 * writing its row on every poll cost a statement per poll — a fifth of a work cycle's
 * statements. So each app remembers when it last wrote a worker's row and writes again only
 * after `RECORD_EVERY_MS`: the stat may see a worker up to that much late or stale, against
 * a window six times as long.
 *
 * The memory is per process (or Worker isolate); another replica writes its own rows.
 * Bounded: past `MAX_WORKERS` entries the oldest are forgotten (and simply written again).
 */

export const RECORD_EVERY_MS = 5_000;
const MAX_WORKERS = 10_000;

export class PollRecords {
  private readonly written = new Map<string, number>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** True when this worker's poll should be written now (and notes that it was). */
  due(environmentId: string, workerId: string): boolean {
    const key = `${environmentId}\0${workerId}`;
    const at = this.now();
    const last = this.written.get(key);
    if (last !== undefined && at - last < RECORD_EVERY_MS) return false;
    this.written.delete(key);
    if (this.written.size >= MAX_WORKERS) this.written.delete(this.written.keys().next().value!);
    this.written.set(key, at);
    return true;
  }

  /** Forgets a worker whose write failed, so its next poll tries again. */
  forget(environmentId: string, workerId: string): void {
    this.written.delete(`${environmentId}\0${workerId}`);
  }
}
