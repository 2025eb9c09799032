/**
 * The lease keeper: renews a claimed item's lease while its holder works, so a long tool run
 * or model stream cannot let the lease lapse and hand the item to a second claimant mid-work
 * — and gives up on a holder that stopped making progress, so a wedged one is recovered
 * exactly as a dead one would be.
 *
 * Timing, which must exist once and not once per consumer:
 * - The tick is min(ttl/3, stall): a lease much longer than the stall budget cannot stretch
 *   stall detection with it.
 * - Each tick checks the stall first. A stalled holder is cancelled with `WorkStalledError`
 *   and the lease is never renewed again: it lapses and the item becomes reclaimable.
 * - Each renewal is bounded by what the lease has left (`ttl − time since the last success`),
 *   so a stalled database cannot hang the holder behind an unreturnable renewal; running out
 *   is `LeaseLostError`, as is any failed renewal.
 * - Ticks follow a fixed grid with at most one buffered: a renewal slower than one interval
 *   is followed at once by the next attempt, whose budget is then what the lease has left.
 *
 * Known limit (the reference's #400): a renewal that times out while its UPDATE still
 * commits leaves the row leased for a holder that has been cancelled; the item is then
 * reclaimable one ttl later rather than at once.
 */
import { type Clock, systemClock } from '../clock.js';
import type { SqlHandle } from '../db/handle.js';
import { LeaseLostError, WorkStalledError } from './errors.js';
import { extend } from './lease.js';
import type { Item } from './types.js';

export interface KeepLeaseOptions {
  /** The lease each renewal buys, in milliseconds. */
  ttlMs: number;
  /** Give up after this long without `progress()`; 0 or absent renews as long as the holder lives. */
  stallMs?: number;
  /** Cancels the keeper's signal too, like a parent context. */
  signal?: AbortSignal;
  clock?: Clock;
}

export class LeaseKeeper {
  /** Aborted when the lease is lost, the holder stalls, the parent signal aborts or on close. */
  readonly signal: AbortSignal;
  private readonly controller = new AbortController();
  private readonly clock: Clock;
  private readonly intervalMs: number;
  private readonly start: number;
  private bought: number;
  private lastProgress = 0;
  private failure: Error | null = null;
  private closed = false;
  private wake: (() => void) | null = null;
  private timer: unknown = null;
  private readonly loop: Promise<void>;

  constructor(
    private readonly db: SqlHandle,
    private readonly item: Item,
    private readonly ttlMs: number,
    private readonly stallMs: number,
    clock: Clock,
    parent?: AbortSignal,
  ) {
    this.clock = clock;
    this.signal = this.controller.signal;
    let interval = ttlMs / 3;
    if (interval <= 0) interval = ttlMs;
    if (stallMs > 0 && stallMs < interval) interval = stallMs;
    this.intervalMs = interval;
    this.start = clock.now();
    this.bought = this.start;
    // Any abort (failure, parent, close) wakes a sleeping loop so it exits at once.
    this.signal.addEventListener('abort', () => this.wakeUp(), { once: true });
    if (parent) {
      if (parent.aborted) this.controller.abort(parent.reason);
      else {
        const onParentAbort = () => this.controller.abort(parent.reason);
        parent.addEventListener('abort', onParentAbort, { once: true });
        // A long-lived parent (a process-wide shutdown signal) must not keep every finished keeper.
        this.signal.addEventListener('abort', () => parent.removeEventListener('abort', onParentAbort), {
          once: true,
        });
      }
    }
    this.loop = this.run();
  }

  /**
   * Reports that the work moved (a tool answered, a mount landed). Call it at the steps a
   * wedge would stop, never on a timer: a timer reports progress a wedged holder is not making.
   */
  progress(): void {
    this.lastProgress = this.clock.now() - this.start;
  }

  /**
   * Stops renewing, waits for the loop to exit (so `item.lease` is stable again for the
   * settling write), aborts the signal and returns the first failure, or null if healthy.
   */
  async close(): Promise<Error | null> {
    this.closed = true;
    this.wakeUp();
    await this.loop;
    if (!this.signal.aborted) this.controller.abort(this.failure ?? new Error('lease keeper closed'));
    return this.failure;
  }

  private async run(): Promise<void> {
    let grid = this.start + this.intervalMs; // the grid point of the tick being waited for
    let due = grid;
    while (!this.closed && !this.signal.aborted) {
      await this.sleepUntil(due);
      // Node's timers can fire up to a millisecond early by the monotonic clock: never tick early.
      while (this.clock.now() < due && !this.closed && !this.signal.aborted) await this.sleepUntil(due);
      if (this.closed || this.signal.aborted) return;
      if (!(await this.tick())) return;
      // Grid ticks that fell during the renewal collapse into one buffered tick, fired now.
      const now = this.clock.now();
      const next = grid + this.intervalMs;
      if (next <= now) {
        grid += Math.floor((now - grid) / this.intervalMs) * this.intervalMs;
        due = now;
      } else {
        grid = next;
        due = next;
      }
    }
  }

  /** One renewal attempt; false when the keeper has failed and must stop. */
  private async tick(): Promise<boolean> {
    const now = this.clock.now();
    if (this.stallMs > 0 && now - this.start - this.lastProgress > this.stallMs) {
      return this.fail(new WorkStalledError(this.item.id, this.stallMs));
    }
    const budget = this.ttlMs - (now - this.bought);
    if (budget <= 0)
      return this.fail(new LeaseLostError(this.item.id, 'lease ran out before it could be renewed'));
    let lease: Item['lease'];
    try {
      // On a copy: a renewal that outlives its budget may still commit later, and must not
      // move `item.lease` under a holder already told the lease is lost (after close()).
      lease = await this.withBudget(extend(this.db, { ...this.item }, this.ttlMs), budget);
    } catch (err) {
      return this.fail(err instanceof Error ? err : new LeaseLostError(this.item.id, String(err)));
    }
    this.item.lease = lease;
    this.bought = this.clock.now();
    return true;
  }

  private withBudget<T>(work: Promise<T>, budget: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const handle = this.clock.setTimeout(
        () =>
          reject(
            new LeaseLostError(
              this.item.id,
              `renewal did not finish within the ${budget} ms the lease had left`,
            ),
          ),
        budget,
      );
      work.then(
        (value) => {
          this.clock.clearTimeout(handle);
          resolve(value);
        },
        (err) => {
          this.clock.clearTimeout(handle);
          reject(err);
        },
      );
    });
  }

  private fail(err: Error): false {
    this.failure ??= err;
    this.controller.abort(err);
    return false;
  }

  private sleepUntil(at: number): Promise<void> {
    const ms = Math.max(0, at - this.clock.now());
    return new Promise<void>((resolve) => {
      this.wake = resolve;
      this.timer = this.clock.setTimeout(() => this.wakeUp(), ms);
    });
  }

  private wakeUp(): void {
    if (this.timer !== null) this.clock.clearTimeout(this.timer);
    this.timer = null;
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }
}

/**
 * Starts a keeper for a claimed item. Run the work under `keeper.signal`, call
 * `keeper.progress()` as it moves, and `await keeper.close()` when it finishes: a non-null
 * result (`LeaseLostError` or `WorkStalledError`) means the work must not settle as done.
 */
export function keepLease(db: SqlHandle, item: Item, options: KeepLeaseOptions): LeaseKeeper {
  return new LeaseKeeper(
    db,
    item,
    options.ttlMs,
    options.stallMs ?? 0,
    options.clock ?? systemClock,
    options.signal,
  );
}
