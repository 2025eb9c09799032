/**
 * Durable turns: the queue's claim lane and the journal, bound together. A lease says who
 * may work on an item now; the journal makes sure that whoever takes an item over — after a
 * crash or a stall — neither repeats a recorded model call nor starts an unsafe tool call a
 * second time, and that the holder it replaced cannot write at all.
 *
 * The journal task is derived from the claimed item:
 * - run = the session, step = the item's kind (one journal per session and kind);
 * - iteration = the session's turn count: the iteration of the journal's last record if that
 *   record belongs to this item (a takeover of the same turn), otherwise one past it;
 * - attempt = 1 (the queue has no retry counter of its own: a reclaim is a redelivery);
 * - delivered = the item's claim count, so a reclaim's claim outranks — fences — the stalled
 *   holder's; dispatch nonce = the item id, which the claim lane never rotates.
 */
import type { JetStreamClient } from '@nats-io/jetstream';
import type { Clock } from '../clock.js';
import type { SqlHandle } from '../db/handle.js';
import {
  type Commit,
  decodeMsg,
  FencedError,
  Journal,
  RestartLimitError,
  readTail,
  type Task,
} from '../journal/index.js';
import { complete, type Item, keepLease, LeaseLostError } from '../queue/index.js';

/** The attempt every queue-driven dispatch carries (see the module doc). */
const TURN_ATTEMPT = 1;

export interface TurnDeps {
  db: SqlHandle;
  js: JetStreamClient;
  clock?: Clock;
}

export interface TurnOptions {
  /** The lease the keeper renews while the turn runs (the claim's ttl). */
  ttlMs: number;
  /** Give up on a holder that reports no progress for this long (0: never). */
  stallMs?: number;
  /** Fail the step after this many consecutive restarts of one iteration. */
  restartLimit?: number;
  /**
   * Finishes the item in place of a plain `complete`: given the turn's commit (null when the
   * crash-loop guard failed the step), it writes what the turn produced and completes the item
   * in one transaction, under the item's lease, so a takeover after a crash either finds both
   * done or neither. A `LeaseLostError` from it means a successor owns the item.
   */
  settle?: (commit: Commit | null, task: Task) => Promise<void>;
}

/** What the handler works with: the journal's durable calls, the lease's signal, progress. */
export interface Turn {
  task: Task;
  journal: Journal;
  /** Aborted when the lease is lost or the holder stalls: stop working. */
  signal: AbortSignal;
  progress(): void;
}

export type TurnOutcome =
  /** The handler ran (or was replayed) and its commit is recorded; the item is complete. */
  | { outcome: 'committed'; commit: Commit; seq: number }
  /** A previous holder had committed but not completed: completed now, nothing re-run. */
  | { outcome: 'recovered'; commit: Commit; seq: number }
  /** A newer claim owns the turn: this holder wrote nothing more and left the item alone. */
  | { outcome: 'fenced' }
  /** The lease was lost (or the holder stalled) before the item could be completed. */
  | { outcome: 'lease_lost'; error: Error }
  /** The crash-loop guard failed the step; the item is complete. */
  | { outcome: 'restart_limit'; restarts: number };

export async function taskForItem(js: JetStreamClient, item: Item): Promise<Task> {
  const tail = await readTail(js, item.sessionId, item.kind);
  let iteration = 0;
  if (tail) {
    const last = decodeMsg(tail).task;
    iteration = last.dispatchNonce === item.id ? last.iteration : last.iteration + 1;
  }
  return {
    runId: item.sessionId,
    stepId: item.kind,
    iteration,
    attempt: TURN_ATTEMPT,
    dispatchNonce: item.id,
    delivered: item.claims,
    streamSeq: 0,
  };
}

/**
 * Runs one turn of a claimed item through the journal under a lease keeper, commits what the
 * handler returns, then completes the item. Safe to call again for the same item after any
 * crash: a takeover replays what was recorded, and a commit that was never followed by the
 * completion is completed without running the handler.
 *
 * When NATS cannot be reached the turn throws `JournalUnavailableError` at once (from the
 * first journal call that meets the outage) and leaves the item uncompleted: the keeper stops
 * renewing, the lease lapses, and the next claimant resumes the turn from what the journal
 * holds — recorded model responses are replayed, an unsafe tool call with an intent but no
 * result comes back interrupted. The lease is not handed back early on purpose: a claimant
 * retrying at once would meet the same outage, and the ttl spaces the retries.
 */
export async function runDurableTurn(
  deps: TurnDeps,
  item: Item,
  handler: (turn: Turn) => Promise<Commit>,
  options: TurnOptions,
): Promise<TurnOutcome> {
  const task = await taskForItem(deps.js, item);
  const keeper = keepLease(deps.db, item, {
    ttlMs: options.ttlMs,
    stallMs: options.stallMs,
    clock: deps.clock,
  });
  let journal: Journal;
  try {
    journal = await Journal.open(deps.js, task, { restartLimit: options.restartLimit });
  } catch (err) {
    if (err instanceof FencedError) {
      await keeper.close();
      return { outcome: 'fenced' };
    }
    if (err instanceof RestartLimitError) {
      return settle(keeper, { outcome: 'restart_limit', restarts: err.restarts }, () =>
        options.settle ? options.settle(null, task) : complete(deps.db, item),
      );
    }
    await keeper.close();
    throw err;
  }
  const finish = (commit: Commit) => () =>
    options.settle ? options.settle(commit, task) : complete(deps.db, item);
  const recovered = journal.committed();
  if (recovered) {
    return settle(
      keeper,
      { outcome: 'recovered', commit: recovered, seq: journal.committedSeq() },
      finish(recovered),
    );
  }
  let commit: Commit;
  let seq: number;
  try {
    commit = await handler({ task, journal, signal: keeper.signal, progress: () => keeper.progress() });
    seq = await journal.commit(commit);
  } catch (err) {
    const failure = await keeper.close();
    if (err instanceof FencedError) return { outcome: 'fenced' };
    if (failure) return { outcome: 'lease_lost', error: failure };
    throw err;
  }
  return settle(keeper, { outcome: 'committed', commit, seq }, finish(commit));
}

/** Finishes the item once the keeper has stopped; a lost lease leaves it to the successor. */
async function settle(
  keeper: ReturnType<typeof keepLease>,
  outcome: TurnOutcome,
  finish: () => Promise<void>,
): Promise<TurnOutcome> {
  const failure = await keeper.close();
  if (failure) return { outcome: 'lease_lost', error: failure };
  try {
    await finish();
  } catch (err) {
    if (err instanceof LeaseLostError) return { outcome: 'lease_lost', error: err };
    throw err;
  }
  return outcome;
}
