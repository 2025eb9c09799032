/**
 * A `Clock` whose time moves only when a test moves it, so the lease keeper's ticks and
 * renewal budgets can be tested without sleeping.
 *
 * Timers fire in time order (ties in the order they were set), each seeing `now()` equal to
 * its due instant, and the work a timer starts is allowed to settle before the next one
 * fires: the keeper's renewals are real database calls, so "settle" means flushing the
 * microtask and macrotask queues and awaiting whatever the `idle` hook waits for (typically
 * the database calls in flight).
 */
import type { Clock } from '../../src/clock.js';

interface Timer {
  id: number;
  at: number;
  fn: () => void;
}

export interface ScheduledTimer {
  /** The clock's time when the timer was set. */
  setAt: number;
  /** The delay it was set for (for the keeper's renewal timeout: the renewal's budget). */
  ms: number;
}

export interface ManualClockOptions {
  /** The clock's initial time (default 0). */
  start?: number;
  /** Awaited after each fired timer, before the next may fire; e.g. the database calls it started. */
  idle?: () => Promise<void>;
}

/** Lets the event loop turn a few times: pending microtasks run, resolved I/O callbacks are delivered. */
export async function flushMacrotasks(turns = 3): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

export class ManualClock implements Clock {
  /** Every `setTimeout` call in order, cleared or not. */
  readonly scheduled: ScheduledTimer[] = [];
  idle: () => Promise<void>;
  private current: number;
  private lastId = 0;
  private readonly timers = new Map<number, Timer>();

  constructor(options: ManualClockOptions = {}) {
    this.current = options.start ?? 0;
    this.idle = options.idle ?? (() => Promise.resolve());
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const delay = Number.isFinite(ms) && ms > 0 ? ms : 0;
    const id = ++this.lastId;
    this.timers.set(id, { id, at: this.current + delay, fn });
    this.scheduled.push({ setAt: this.current, ms });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** How many timers are set and not yet fired or cleared. */
  get pendingTimers(): number {
    return this.timers.size;
  }

  /**
   * Moves time forward by `ms`, firing each timer that comes due on the way at its own
   * instant and letting what it started settle before the next one fires.
   */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    await this.settle();
    for (let next = this.earliest(target); next; next = this.earliest(target)) {
      this.current = Math.max(this.current, next.at);
      this.fire(next);
      await this.settle();
    }
    this.current = target;
    await this.settle();
  }

  /**
   * Moves time forward by `ms` at once and only then fires the timers that came due, all
   * late, all seeing the new time — as real timers do when the process was busy or asleep.
   */
  async jump(ms: number): Promise<void> {
    this.current += ms;
    await this.settle();
  }

  /**
   * Fires every timer already due at the current instant (a zero delay is due at once, as
   * with real timers) and waits for the `idle` hook, until nothing is due any more.
   */
  async settle(): Promise<void> {
    for (let round = 0; round < 10_000; round++) {
      await flushMacrotasks();
      await this.idle();
      await flushMacrotasks();
      const due = this.earliest(this.current);
      if (!due) return;
      this.fire(due);
    }
    throw new Error('ManualClock.settle: timers keep coming due without time moving');
  }

  private earliest(until: number): Timer | null {
    let best: Timer | null = null;
    for (const timer of this.timers.values()) {
      if (timer.at > until) continue;
      if (!best || timer.at < best.at || (timer.at === best.at && timer.id < best.id)) best = timer;
    }
    return best;
  }

  private fire(timer: Timer): void {
    this.timers.delete(timer.id);
    timer.fn();
  }
}
