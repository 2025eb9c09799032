/**
 * What the replicas test's clients share: the record of every holder write (`Outcome`, the
 * contention audit's shape) and of every enqueue, the holders the clients believe live, the
 * stale holders' tasks, and when the run may enqueue and when it is done.
 *
 * The clients' own overlap check (`acquire`): a holder's lease surely lasts until it sent its
 * last lease-setting call plus that call's ttl (the database stamps the lease after the send),
 * and a hand-out answered to another holder before that instant was made while the lease was
 * live — two live holders of one item. Every lease-setting call of a lane uses one ttl, so a
 * later call (even one whose answer was lost) can only move that instant forward.
 */
import { sql } from 'drizzle-orm';
import { type Database, maybeRow } from '../../../src/db/handle.js';
import type { Outcome, Unit } from '../contention/audit.js';

/** The claim lane's lease on every claim and extend. */
export const PLATFORM_TTL_SECONDS = 15;
/** The wire's heartbeat ttl: the same as the startup lease an ack installs (30 s). */
export const WIRE_TTL_SECONDS = 30;

/** A holder write whose first answer was lost (a `reset`) and whose retry was refused. */
export interface Ambiguous {
  outcome: Outcome;
  /** What the retry answered (409, 404 or 412): the first attempt may have been the one that landed. */
  retryStatus: number;
}

interface Holding {
  holder: string;
  surelyUntil: number;
  released: boolean;
}

/** One stale write to one replica: what it answered. */
export interface StaleAnswer {
  lane: 'platform' | 'wire';
  call: string;
  replica: number;
  status: number;
  at: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class Run {
  readonly outcomes: Outcome[] = [];
  readonly ambiguous: Ambiguous[] = [];
  readonly units: Unit[] = [];
  /** Enqueues whose answer was lost: units only if the row exists afterwards. */
  readonly ambiguousEnqueues: Unit[] = [];
  /** Claims whose answer was lost: whatever they leased waits out its lease. */
  lostClaims = 0;
  readonly staleAnswers: StaleAnswer[] = [];
  readonly stale: Promise<void>[] = [];
  readonly overlaps: string[] = [];
  readonly failures: string[] = [];
  staleHolders = 0;
  staleEchoes = 0;
  completions = 0;
  enqueueIssued = 0;
  enqueuesInFlight = 0;
  /** How many items may be enqueued so far (raised once the killed replica is back). */
  enqueueAllowed: number;
  done = false;
  doneAt = 0;
  private readonly holdings = new Map<string, Holding>();
  private readonly forcedLosses = { platform: 0, wire: 0 };

  constructor(
    readonly db: Database,
    readonly items: number,
    /** Enqueue no further ahead of the completions than this: load for the whole run. */
    readonly window: number,
    enqueueAllowed: number,
    readonly lossRate: number,
    readonly signal: AbortSignal,
  ) {
    this.enqueueAllowed = enqueueAllowed;
  }

  finish(): void {
    this.done = true;
    this.doneAt = performance.now();
  }

  /** Waits for an enqueue slot; false once the quota is issued (or the run is over). */
  async enqueueSlot(): Promise<boolean> {
    for (;;) {
      if (this.enqueueIssued >= this.items || this.signal.aborted) return false;
      if (this.enqueueIssued < this.enqueueAllowed && this.enqueueIssued - this.completions < this.window) {
        this.enqueueIssued++;
        return true;
      }
      await sleep(10);
    }
  }

  /** A holder got `unit`: flags another holder whose lease was surely still live. */
  acquire(unit: string, holder: string, sentAt: number, ttlSeconds: number): void {
    const now = performance.now();
    const prev = this.holdings.get(unit);
    if (prev && !prev.released && now < prev.surelyUntil) {
      this.overlaps.push(
        `${unit}: ${holder} got it ${(prev.surelyUntil - now).toFixed(0)} ms before ${prev.holder}'s lease could end`,
      );
    }
    this.holdings.set(unit, { holder, surelyUntil: sentAt + ttlSeconds * 1000, released: false });
  }

  /** The holder's lease-setting call sent at `sentAt` was accepted. */
  renew(unit: string, holder: string, sentAt: number, ttlSeconds: number): void {
    const h = this.holdings.get(unit);
    if (h?.holder === holder) h.surelyUntil = Math.max(h.surelyUntil, sentAt + ttlSeconds * 1000);
  }

  /** The holder finished, gave up, or had its lease taken away by the test. */
  release(unit: string, holder: string): void {
    const h = this.holdings.get(unit);
    if (h?.holder === holder) h.released = true;
  }

  /** Whether this holder of `lane` has its lease taken away now: forced first, then by chance. */
  losesLease(lane: 'platform' | 'wire'): boolean {
    const loses = this.forcedLosses[lane] > 0 || Math.random() < this.lossRate;
    if (this.forcedLosses[lane] > 0) this.forcedLosses[lane]--;
    if (loses) this.staleHolders++;
    return loses;
  }

  /** The next holder of each lane loses its lease (a stale proof every replica then sees, for sure). */
  forceLosses(): void {
    this.forcedLosses.platform++;
    this.forcedLosses.wire++;
  }

  record(o: Outcome, afterReset: boolean): void {
    if (afterReset && o.outcome === 'refused') {
      this.ambiguous.push({ outcome: { ...o, outcome: 'ambiguous', status: null }, retryStatus: o.status! });
      if (o.call === 'complete' || o.call === 'stop') this.completions++;
      return;
    }
    this.outcomes.push(o);
    if (o.outcome === 'accepted' && !o.stale && (o.call === 'complete' || o.call === 'stop')) {
      this.completions++;
    }
  }

  /** Runs a stale holder in the background: waits until `handedOn`, then makes its writes. */
  spawnStale(what: string, handedOn: () => Promise<boolean>, writes: () => Promise<void>): void {
    const task = (async () => {
      while (!(await handedOn())) {
        if (this.signal.aborted) {
          this.failures.push(`${what}: never handed on`);
          return;
        }
        await sleep(100);
      }
      await writes();
    })().catch((err: unknown) => void this.failures.push(`${what}: ${String(err)}`));
    this.stale.push(task);
  }

  /** Claim lane: true once the item was claimed again after the holder's `claims`th hand-out. */
  claimedAgain(id: string, claims: number): () => Promise<boolean> {
    return async () =>
      ((await maybeRow<{ n: number }>(this.db, sql`SELECT claims AS n FROM work_items WHERE id = ${id}`))
        ?.n ?? 0) > claims;
  }

  /** Wire: true once the attempt's id was retired (the item handed out again under a fresh one). */
  retired(id: string): () => Promise<boolean> {
    return async () => !(await maybeRow(this.db, sql`SELECT 1 AS ok FROM work_items WHERE id = ${id}`));
  }
}
