/**
 * Group commit for one operation: calls that arrive while its statement is in flight wait, and
 * the next statement carries all of them — one round trip, one plan and one commit instead of
 * one each. A call that finds nothing in flight goes out at once, alone, so an idle server
 * answers as it would without the fold; the saving appears exactly when the database is busy.
 *
 * Why: under load every lease-holder write (an ack, a heartbeat, a stop) is a one-row UPDATE,
 * and PostgreSQL's cost per statement (parse, plan, executor start-up, commit) is several times
 * its cost per row: four rows a statement made ≈ 2.8× the row updates a second of one row a
 * statement on a two-core machine. A request's answer must still be its own, so:
 *
 * - a statement carries at most one call per `key` (the item): a second call for the same item
 *   waits for the next statement, as it would have waited for the row lock, so each call sees
 *   the item as the one before it left it;
 * - `many` answers only the calls it settled (the row its statement returned); every other call
 *   runs `one`, the operation's own one-item path, which re-reads the item and gives the exact
 *   answer it always gave (not found, precondition failed, conflict). Each call therefore acts
 *   as if it ran alone at some moment while it was waiting;
 * - a statement that fails as a whole (a deadlock, a value the database refused, a dropped
 *   connection) wrote nothing, so each of its calls runs `one` on its own: one caller's bad
 *   input can never fail another's request. When it failed because the database could not
 *   be reached at all (no connection within the pool's acquire timeout, refused, cut), its
 *   calls fail with that error at once: alone they would only wait out the same timeout again;
 * - a statement that stays out longer than `stallMs` (waiting on a lock, say) no longer holds
 *   back the calls behind it: they go out in a statement of their own. Under load a statement
 *   is out a few milliseconds, so this never happens; when one is stuck, the calls behind it
 *   wait at most `stallMs` before taking a connection of their own, as they would without the
 *   fold.
 *
 * A fold belongs to one database handle, whose pool it shares with everything else.
 */
import { type Clock, systemClock } from '../clock.js';
import { isDatabaseUnavailable } from './errors.js';

export interface FoldOps<In, Out> {
  /** What two calls must not share a statement on (the item's id). */
  key(input: In): string;
  /** The operation alone, with every answer it can give. */
  one(input: In): Promise<Out>;
  /** Two or more calls of distinct keys in one statement; answers the ones it settled, by key. */
  many(inputs: In[]): Promise<Map<string, Out>>;
}

interface Waiting<In, Out> {
  input: In;
  key: string;
  resolve(value: Out): void;
  reject(reason: unknown): void;
}

/** The most calls one statement carries: the rest wait for the next (a statement stays small). */
export const FOLD_MAX = 64;
/**
 * How long the statement out may hold back the calls waiting for it. A folded statement of the
 * work API is out 1–5 ms under load; one out this long is waiting on something else.
 */
export const FOLD_STALL_MS = 50;

export interface FoldLimits {
  /** The most calls one statement carries (default `FOLD_MAX`). */
  max?: number;
  /** How long the statement out may hold back waiting calls (default `FOLD_STALL_MS`). */
  stallMs?: number;
  /** What measures that time (default the system's; tests move a manual one). */
  clock?: Clock;
}

export class Fold<In, Out> {
  #waiting: Waiting<In, Out>[] = [];
  /** The keys of the calls in flight: a call of one of them waits, as it would for the row. */
  #flying = new Set<string>();
  /** Statements out now, and when the last one went. */
  #out = 0;
  #lastSentAt = 0;
  #stallTimer: unknown = null;
  readonly #max: number;
  readonly #stallMs: number;
  readonly #clock: Clock;
  /** How much folding happened (tests, the bench): statements sent, the calls they carried, and calls re-run alone. */
  statements = 0;
  calls = 0;
  alone = 0;

  constructor(
    private readonly ops: FoldOps<In, Out>,
    limits: FoldLimits = {},
  ) {
    this.#max = limits.max ?? FOLD_MAX;
    this.#stallMs = limits.stallMs ?? FOLD_STALL_MS;
    this.#clock = limits.clock ?? systemClock;
  }

  run(input: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.#waiting.push({ input, key: this.ops.key(input), resolve, reject });
      this.#pump();
    });
  }

  /**
   * Sends what waits unless a statement is out. One at a time folds the most: two at once
   * carried 1.8 calls a statement in the wire benchmark instead of 3.1, and saved less CPU.
   * The exception is a stalled statement (out `stallMs` or more): the calls behind it go.
   */
  #pump(): void {
    if (this.#out > 0 && this.#clock.now() - this.#lastSentAt < this.#stallMs) {
      if (this.#waiting.length > 0) this.#watchStall();
      return;
    }
    const batch = this.#take();
    if (batch.length === 0) return;
    this.#out++;
    this.#lastSentAt = this.#clock.now();
    for (const w of batch) this.#flying.add(w.key);
    void this.#send(batch);
    if (this.#waiting.length > 0) this.#watchStall();
  }

  /** Pumps again once the statement out has been out `stallMs`, if calls still wait then. */
  #watchStall(): void {
    if (this.#stallTimer) return;
    const left = Math.max(0, this.#lastSentAt + this.#stallMs - this.#clock.now());
    this.#stallTimer = this.#clock.setTimeout(() => {
      this.#stallTimer = null;
      this.#pump();
    }, left);
    // Never what keeps a process alive (Node's timers have unref; others need none).
    (this.#stallTimer as { unref?: () => void }).unref?.();
  }

  /** The oldest waiting calls, one per key and none of a key in flight, at most `max`; the others keep their places. */
  #take(): Waiting<In, Out>[] {
    const batch: Waiting<In, Out>[] = [];
    const rest: Waiting<In, Out>[] = [];
    const keys = new Set<string>(this.#flying);
    for (const w of this.#waiting) {
      if (batch.length < this.#max && !keys.has(w.key)) {
        keys.add(w.key);
        batch.push(w);
      } else {
        rest.push(w);
      }
    }
    this.#waiting = rest;
    return batch;
  }

  async #send(batch: Waiting<In, Out>[]): Promise<void> {
    this.statements++;
    this.calls += batch.length;
    const answers = new Map<string, Answer<Out>>();
    if (batch.length === 1) {
      const [only] = batch as [Waiting<In, Out>];
      answers.set(
        only.key,
        await this.ops.one(only.input).then(
          (value) => ({ ok: true, value }),
          (reason: unknown) => ({ ok: false, reason }),
        ),
      );
    } else {
      try {
        for (const [key, value] of await this.ops.many(batch.map((w) => w.input))) {
          answers.set(key, { ok: true, value });
        }
      } catch (err) {
        // Nothing of it was written: each call is answered on its own, or, when the database
        // could not be reached, fails as it would have alone.
        if (isDatabaseUnavailable(err)) for (const w of batch) answers.set(w.key, { ok: false, reason: err });
      }
    }
    for (const w of batch) if (answers.has(w.key)) this.#flying.delete(w.key);
    // The next statement goes out before this one's callers run, so the database works on it
    // while they answer.
    this.#out--;
    this.#pump();
    for (const w of batch) {
      const answer = answers.get(w.key);
      if (answer?.ok) w.resolve(answer.value);
      else if (answer) w.reject(answer.reason);
      else {
        // Off the fold's turn, so statements need not wait for it; its key stays in flight.
        this.alone++;
        void this.ops
          .one(w.input)
          .then(w.resolve, w.reject)
          .finally(() => {
            this.#flying.delete(w.key);
            this.#pump();
          });
      }
    }
  }
}

type Answer<Out> = { ok: true; value: Out } | { ok: false; reason: unknown };
