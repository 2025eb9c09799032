/**
 * What Open decides from the records it read (docs/journal.md, "Opening a claim"), kept free of I/O
 * so every branch is a function of the journal's contents:
 *
 * - **stale**: the tail belongs to a later iteration; the engine has moved on.
 * - **committed**: the tail is this attempt's commit of this iteration; the previous holder
 *   crashed before publishing or acking its event, and no claim may be added after it.
 * - **fenced**: a claim of this iteration that ranks newer than this task (or is this very
 *   dispatch's) is already in the journal.
 * - **claim**: this task may claim; `view` is what the iteration needs rebuilt.
 */
import { compareRank, identityKey } from './claim-rank.js';
import {
  assertToken,
  type ClaimBody,
  type Commit,
  type InputPlacedBody,
  type JournalRecord,
  type RecordOf,
  type Task,
} from './types.js';

/**
 * fresh: nothing of this iteration is recorded. recovering: a claim of this attempt is
 * recorded since the iteration's last commit, and its records replay by position.
 * new-attempt: only earlier attempts (or a committed run) recorded this iteration, and only
 * their unsafe tool intents are honoured.
 */
export type ReplayMode = 'fresh' | 'recovering' | 'new-attempt';

/** An input as it joined the conversation; `iteration` comes from the record's header. */
export interface PlacedInput {
  requestId: string;
  mode: string;
  content?: InputPlacedBody['content'];
  iteration: number;
}

export interface IterationView {
  /** This iteration's records before the claim, in journal order. */
  records: JournalRecord[];
  /** The state of the last commit of an earlier iteration. */
  state: Uint8Array | null;
  /** The pause this delivery resumes: the newest record of the iteration before the claim. */
  pause: RecordOf<'pause'> | null;
  restarts: number;
  placed: PlacedInput[];
  mode: ReplayMode;
  /** Records this attempt wrote since the iteration's last commit: replayed by position. */
  epoch: JournalRecord[];
}

export type OpenPlan =
  | { kind: 'stale' }
  | { kind: 'fenced' }
  | { kind: 'committed'; commit: Commit; seq: number; view: IterationView }
  | { kind: 'claim'; view: IterationView };

/** Classifies a task against every record of its step's journal, in order. */
export function classify(records: readonly JournalRecord[], task: Task): OpenPlan {
  const tail = records.at(-1);
  if (tail && tail.task.iteration > task.iteration) return { kind: 'stale' };
  if (
    tail?.type === 'commit' &&
    tail.task.iteration === task.iteration &&
    tail.task.attempt === task.attempt
  ) {
    return { kind: 'committed', commit: tail.data, seq: tail.seq, view: rebuild(records, task) };
  }
  for (const r of records) {
    if (r.type !== 'claim' || r.task.iteration !== task.iteration) continue;
    // An equal claim is this very dispatch's, from another handle (or an Open retried after its
    // claim landed). Two handles of one claim would write the same indexes, and the dedup
    // window would answer the second with the first's records, so the later one stops.
    if (compareRank(r.task, task) > 0 || identityKey(r.task) === identityKey(task)) return { kind: 'fenced' };
  }
  return { kind: 'claim', view: rebuild(records, task) };
}

/** Rebuilds what the iteration needs from the records before the claim (docs/journal.md, "Opening a claim", step 4). */
export function rebuild(records: readonly JournalRecord[], task: Task): IterationView {
  const mine = records.filter((r) => r.task.iteration === task.iteration);
  let lastCommitSeq = 0;
  for (const r of mine) if (r.type === 'commit') lastCommitSeq = r.seq;
  const epoch = mine.filter((r) => r.seq > lastCommitSeq && r.task.attempt === task.attempt);

  let state: Uint8Array | null = null;
  for (const r of records) {
    if (r.type === 'commit' && r.task.iteration < task.iteration) state = r.data.state ?? null;
  }

  const newest = mine.at(-1);
  let mode: ReplayMode = 'fresh';
  if (epoch.some((r) => r.type === 'claim')) mode = 'recovering';
  else if (mine.length > 0) mode = 'new-attempt';

  return {
    records: mine,
    state,
    pause: newest?.type === 'pause' ? newest : null,
    restarts: restartsAtTail(records, task.iteration),
    placed: records.filter((r) => r.type === 'input.placed').map(placedInput),
    mode,
    epoch,
  };
}

/**
 * Claims of this iteration sitting at the tail with nothing between them: deliveries that
 * claimed and made no progress. Any other record, a commit included, ends the run, so a retry
 * after a commit starts from 0 (docs/journal.md, "Restarts and the crash-loop guard").
 */
function restartsAtTail(records: readonly JournalRecord[], iteration: number): number {
  let count = 0;
  for (let i = records.length - 1; i >= 0; i--) {
    const r = records[i]!;
    if (r.type !== 'claim' || r.task.iteration !== iteration) break;
    count++;
  }
  return count;
}

function placedInput(r: RecordOf<'input.placed'>): PlacedInput {
  const body = r.data;
  const placed: PlacedInput = { requestId: body.request_id, mode: body.mode, iteration: r.task.iteration };
  if (body.content !== undefined) placed.content = body.content;
  return placed;
}

/** The claim body in Go's field order; the nonce and an unknown stream_seq are omitted (omitempty). */
export function claimBody(task: Task): Uint8Array {
  const body: ClaimBody = {
    iteration: task.iteration,
    attempt: task.attempt,
    dispatch_nonce: task.dispatchNonce || undefined,
    delivered: task.delivered,
    stream_seq: task.streamSeq || undefined,
  };
  return new TextEncoder().encode(JSON.stringify(body));
}

export function validateTask(task: Task): void {
  assertToken('run id', task.runId);
  assertToken('step id', task.stepId);
  for (const field of ['iteration', 'attempt', 'delivered'] as const) {
    if (!Number.isSafeInteger(task[field]) || task[field] < 0) {
      throw new TypeError(`task.${field} must be a whole number ≥ 0, got ${task[field]}`);
    }
  }
  if (task.streamSeq !== undefined && (!Number.isSafeInteger(task.streamSeq) || task.streamSeq < 0)) {
    throw new TypeError(`task.streamSeq must be a whole number ≥ 0, got ${task.streamSeq}`);
  }
}
