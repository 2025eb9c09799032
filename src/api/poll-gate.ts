/**
 * Long-poll admission. A long poll (`block_ms` given) parks a request for up to a second; it
 * holds no database connection while parked, but it holds a socket, memory and — on every
 * wake-up or re-poll — a turn at the pool. The gate bounds how many are parked at once, per
 * environment key and per app (one per process, or per Worker isolate), so one key's fleet,
 * or a flood of them, cannot crowd out everyone else. Over a cap the poll is refused at once
 * with 429 and `retry-after: 1`, which the SDK's WorkPoller treats as transient: it waits and
 * polls again, so a worker over the cap is slowed, never stopped.
 *
 * Glossary: a *slot* is one admitted long poll; `admit` takes one, its release gives it back
 * (exactly once, however the poll ends).
 *
 * Polls without `block_ms` are not gated: they answer after one query and never park, so
 * their cost is the pool's to bound (and a request-rate limit's), not a concurrency cap's.
 *
 * The counts live in memory: on Node they are the process's, on Workers an isolate's, so
 * there the per-key cap holds per isolate, not across the fleet.
 */
import { MAX_LONG_POLLS_PER_KEY, MAX_LONG_POLLS_PER_PROCESS } from '../config.js';
import { tooManyRequests } from './errors.js';

/** The caps' defaults, the settings' defaults too (config.ts says why these numbers). */
export { MAX_LONG_POLLS_PER_KEY, MAX_LONG_POLLS_PER_PROCESS };

/** A parked poll ends within a second (`block_ms` ≤ 999), so a slot is likely free by then. */
export const RETRY_AFTER_SECONDS = 1;

export interface PollGateOptions {
  /** Concurrent long polls per environment key (default `MAX_LONG_POLLS_PER_KEY`). */
  perKey?: number;
  /** Concurrent long polls in this app (default `MAX_LONG_POLLS_PER_PROCESS`). */
  perProcess?: number;
}

export class PollGate {
  readonly perKey: number;
  readonly perProcess: number;
  private readonly byKey = new Map<string, number>();
  private total = 0;

  constructor(options: PollGateOptions = {}) {
    this.perKey = positive('perKey', options.perKey ?? MAX_LONG_POLLS_PER_KEY);
    this.perProcess = positive('perProcess', options.perProcess ?? MAX_LONG_POLLS_PER_PROCESS);
  }

  /**
   * Takes a slot for a long poll by `keyId`, or throws 429 when the key or the app is at its
   * cap. The returned release is idempotent, so a `finally` and an abort can both call it.
   */
  admit(keyId: string): () => void {
    const held = this.byKey.get(keyId) ?? 0;
    if (held >= this.perKey) {
      throw tooManyRequests(
        `too many concurrent long polls for this environment key (at most ${this.perKey}); retry after ${RETRY_AFTER_SECONDS} s`,
        RETRY_AFTER_SECONDS,
      );
    }
    if (this.total >= this.perProcess) {
      throw tooManyRequests(
        `too many concurrent long polls on this server (at most ${this.perProcess}); retry after ${RETRY_AFTER_SECONDS} s`,
        RETRY_AFTER_SECONDS,
      );
    }
    this.byKey.set(keyId, held + 1);
    this.total++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const left = (this.byKey.get(keyId) ?? 1) - 1;
      // Dropping a key at zero keeps the map as small as the set of keys polling right now.
      if (left === 0) this.byKey.delete(keyId);
      else this.byKey.set(keyId, left);
    };
  }

  /** Long polls parked right now: in this app, or for one key. */
  open(keyId?: string): number {
    return keyId === undefined ? this.total : (this.byKey.get(keyId) ?? 0);
  }
}

function positive(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`PollGate ${name} must be a positive integer, got ${value}`);
  }
  return value;
}
