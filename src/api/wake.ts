/**
 * Long-poll wake-ups. A poll that found nothing waits here, holding no transaction and no
 * pooled connection, until work may have arrived for its environment, its deadline passes
 * or the client goes away. On Node a LISTEN of its own feeds a `WakeHub` (`functions/`); on
 * Workers each request LISTENs on its own connection (`ListeningWake`); without a feed a
 * waiter simply re-polls on a growing backoff.
 */
import { pause } from '../clock.js';

export interface WakeSource {
  /** Starts watching an environment; notifications after this call are not missed. */
  watch(environmentId: string): Watch;
}

export interface Watch {
  /**
   * For a watch that must start hearing first (a LISTEN on the request's own connection, a
   * statement of its own): starts it, once, and settles when every notification sent from
   * then on reaches this watch, so a read after it misses nothing. Absent: the watch hears
   * from the moment it was made.
   */
  readonly listen?: () => Promise<void>;
  /**
   * A long poll may end at its deadline without reading again when its wait ran out (false):
   * nothing was notified, and its caller's next poll reads first. Unset (the Node hub), a
   * long poll reads once more at its deadline, for reservations and leases that lapsed while
   * it waited (nothing notifies those).
   */
  readonly endsAtDeadline?: boolean;
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

/**
 * No feed (Workers without LISTEN): a waiter re-reads after a backoff that starts at
 * BACKOFF_MS and doubles, so an empty 999 ms long poll reads at 0, 100, 300 and 700 ms —
 * four statements, not ten; work enqueued while it waits is seen by the next read, at most
 * 400 ms later (or by the caller's next poll, which reads first).
 */
export const BACKOFF_MS = 100;
export const pollingWake: WakeSource = {
  watch: () => {
    let backoff = BACKOFF_MS;
    return {
      endsAtDeadline: true,
      // Without a feed a backoff that ran out may have missed work: it reads as a wake-up;
      // the deadline cutting it short does not.
      wait: async (ms, signal) => {
        const step = backoff;
        backoff *= 2;
        await pause(Math.min(ms, step), signal);
        return signal.aborted || step <= ms;
      },
      close: () => {},
    };
  },
};

/**
 * How long a `ListeningWake` waiter trusts silence: past it a wait reports a possible change
 * and the waiter reads. A pooler in transaction mode may accept the LISTEN and never deliver
 * (its server connection went back to the pool); a stream then still sees its events within
 * this, not at its end. Longer than any long poll, so those never pay for it.
 */
export const RECHECK_MS = 15_000;

/**
 * Wake-ups on a request's own database connection (Workers, where no listener outlives the
 * request): the first watch to `listen` LISTENs there, and each notification wakes this
 * request's watchers of the key `keyOf` reads from its payload (null: all of them). `listen`
 * settles once the LISTEN has committed, so a read after it misses nothing: what was
 * committed before, the read sees; what commits after is notified. A refused LISTEN (a read
 * replica, a pooler that refuses it) leaves the watchers on `pollingWake`'s backoff, and is
 * reported to `onRefused`.
 */
export class ListeningWake implements WakeSource {
  private readonly hub = new WakeHub();
  private listening: Promise<boolean> | null = null;

  constructor(
    private readonly listenOn: (onPayload: (payload: string) => void) => Promise<void>,
    private readonly keyOf: (payload: string) => string | null,
    private readonly onRefused?: (err: unknown) => void,
    private readonly recheckMs = RECHECK_MS,
  ) {}

  watch(key: string): Watch {
    const watch = this.hub.watch(key);
    const fallback = pollingWake.watch(key);
    let heard = true;
    let readAt = performance.now();
    const recheckMs = this.recheckMs;
    return {
      listen: () =>
        this.started().then((ok) => {
          heard = ok;
          readAt = performance.now();
        }),
      endsAtDeadline: true,
      async wait(ms, signal) {
        if (!heard) return fallback.wait(ms, signal);
        // Silence is trusted until `recheckMs` after the last read; a wait that reaches that
        // point reads as a possible change, one that ends at its own `ms` first does not.
        const trusted = Math.max(1, recheckMs - (performance.now() - readAt));
        const woken = await watch.wait(Math.min(ms, trusted), signal);
        if (!woken && ms < trusted) return false;
        readAt = performance.now();
        return true;
      },
      close: () => watch.close(),
    };
  }

  /** The LISTEN, sent once for all of this source's watches: true once it has committed, false if refused. */
  private started(): Promise<boolean> {
    this.listening ??= this.listenOn((payload) => {
      const k = this.keyOf(payload);
      if (k === null) this.hub.notifyAll();
      else this.hub.notify(k);
    }).then(
      () => true,
      (err: unknown) => {
        this.onRefused?.(err);
        return false;
      },
    );
    return this.listening;
  }
}
