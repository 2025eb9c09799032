/**
 * Long-poll wake-ups. A poll that found nothing waits here, holding no transaction and no
 * pooled connection, until work may have arrived for its environment, its deadline passes
 * or the client goes away. Whatever feeds `notify` (LISTEN on Node, nothing on Workers)
 * lives in `functions/`; without a feed a waiter simply re-polls on a short backoff.
 */
import { pause } from '../clock.js';

export interface WakeSource {
  /** Starts watching an environment; notifications after this call are not missed. */
  watch(environmentId: string): Watch;
}

export interface Watch {
  /**
   * Resolves on a notification since the last wait (or the watch began), after `ms`, or on
   * abort: true when a notification (or the abort) ended it, false when `ms` ran out — so a
   * waiter with nothing to read on a mere timeout can skip the read.
   */
  wait(ms: number, signal: AbortSignal): Promise<boolean>;
  close(): void;
}

/** An in-process hub: `notify(environmentId)` wakes that environment's watchers. */
export class WakeHub implements WakeSource {
  private readonly watchers = new Map<string, Set<HubWatch>>();

  notify(environmentId: string): void {
    for (const w of this.watchers.get(environmentId) ?? []) w.fire();
  }

  /** Wakes every watcher: used when the feed (re)connects and may have missed notifications. */
  notifyAll(): void {
    for (const set of this.watchers.values()) for (const w of set) w.fire();
  }

  watch(environmentId: string): Watch {
    const set = this.watchers.get(environmentId) ?? new Set<HubWatch>();
    this.watchers.set(environmentId, set);
    const watch = new HubWatch(() => {
      set.delete(watch);
      if (set.size === 0) this.watchers.delete(environmentId);
    });
    set.add(watch);
    return watch;
  }

  get watching(): number {
    let n = 0;
    for (const set of this.watchers.values()) n += set.size;
    return n;
  }
}

class HubWatch implements Watch {
  private pending = false;
  private resolve: (() => void) | null = null;
  constructor(private readonly onClose: () => void) {}

  fire(): void {
    this.pending = true;
    this.resolve?.();
  }

  wait(ms: number, signal: AbortSignal): Promise<boolean> {
    if (this.pending || signal.aborted) {
      this.pending = false;
      return Promise.resolve(true);
    }
    return new Promise<boolean>((resolve) => {
      const done = (woken: boolean) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', woke);
        this.resolve = null;
        this.pending = false;
        resolve(woken);
      };
      const woke = () => done(true);
      const timer = setTimeout(() => done(false), ms);
      signal.addEventListener('abort', woke, { once: true });
      this.resolve = woke;
    });
  }

  close(): void {
    this.resolve?.();
    this.onClose();
  }
}

/** No feed: a waiter re-polls after a short backoff (Workers, where a listener cannot live). */
export const BACKOFF_MS = 100;
export const pollingWake: WakeSource = {
  watch: () => ({
    // Without a feed every backoff may have missed work: it reads as a wake-up.
    wait: (ms, signal) => pause(Math.min(ms, BACKOFF_MS), signal).then(() => true),
    close: () => {},
  }),
};
