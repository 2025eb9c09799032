/**
 * A Journal is one claim on one dispatch of an agent step (docs/journal.md). `Journal.open`
 * claims the task's dispatch, or says why it may not; every later write is fenced on the tail
 * the handle last saw (see writer.ts); `model` and `tool` make calls durable and replay them
 * for a successor (see replay.ts); `commit` ends the iteration with one record.
 *
 * A handle has one owner (guard.ts): a second call while one is pending throws
 * `ConcurrentUseError`, except `entry` appends from a running tool function.
 */
import type { JetStreamClient } from '@nats-io/jetstream';
import { FencedError, JournalTransportError, RestartLimitError, StaleError } from './errors.js';
import { OwnerGuard } from './guard.js';
import { assertJson } from './json.js';
import {
  claimBody,
  classify,
  type IterationView,
  type PlacedInput,
  type ReplayMode,
  validateTask,
} from './open.js';
import { publishRecord, WrongLastSequenceError } from './publish.js';
import { readRange, readTail } from './read.js';
import { ReplayBook, type ToolResult } from './replay.js';
import { callTool, type ToolFn } from './tool.js';
import type {
  BodyOf,
  Commit,
  InputPlacedBody,
  JournalRecord,
  Json,
  RecordType,
  Replay,
  Task,
} from './types.js';
import { FencedWriter } from './writer.js';

/** Crash-loop guard default: a fourth delivery in a row that finds only bare claims fails the step. */
export const DEFAULT_RESTART_LIMIT = 3;
/** Open re-classifies after each lost claim race; more than this means the journal is hot. */
const OPEN_TRIES = 5;

export interface OpenOptions {
  /** Fail the step when `restarts()` reaches this (docs/journal.md, "Restarts and the crash-loop guard"). Default 3; Infinity turns it off. */
  restartLimit?: number;
  /**
   * Called after the guard wrote its `commit{fail}`, before `RestartLimitError` is thrown:
   * the worker publishes `step.failed` from `journal.committed()` here.
   */
  onRestartLimit?: (journal: Journal) => void | Promise<void>;
}

export type ModelFn = () => Json | Promise<Json>;

/** What `append` writes: every type but the claim and the commit, which have their own calls. */
export type AppendType = Exclude<RecordType, 'claim' | 'commit'>;

export class Journal {
  readonly #writer: FencedWriter;
  readonly #view: IterationView;
  readonly #book: ReplayBook;
  readonly #placed: PlacedInput[];
  readonly #stepRecords: readonly JournalRecord[];
  readonly #guard = new OwnerGuard();
  #toolCalls = 0;
  #modelCalls = 0;

  private constructor(writer: FencedWriter, view: IterationView, stepRecords: readonly JournalRecord[]) {
    this.#writer = writer;
    this.#view = view;
    this.#stepRecords = stepRecords;
    this.#book = new ReplayBook(writer.task, view.records, view.epoch);
    this.#placed = [...view.placed];
  }

  /**
   * Claims `task`'s dispatch. Throws `StaleError` (a later iteration holds the step; nothing
   * written), `FencedError` (a newer claim of this iteration won; nothing written),
   * `RestartLimitError` (the crash-loop guard failed the step) or `NotProvisionedError`.
   * When this attempt already committed the iteration, returns a handle whose `committed()`
   * reports that commit and that writes nothing.
   */
  static async open(js: JetStreamClient, task: Task, options: OpenOptions = {}): Promise<Journal> {
    validateTask(task);
    const limit = options.restartLimit ?? DEFAULT_RESTART_LIMIT;
    for (let round = 0; round < OPEN_TRIES; round++) {
      const tail = await readTail(js, task.runId, task.stepId);
      const tailSeq = tail?.seq ?? 0;
      const records = tail ? await readRange(js, task.runId, task.stepId, 1, tailSeq) : [];
      const plan = classify(records, task);
      if (plan.kind === 'stale') throw new StaleError();
      if (plan.kind === 'fenced') throw new FencedError();
      if (plan.kind === 'committed') {
        const writer = new FencedWriter(js, task, tailSeq, 0, { commit: plan.commit, seq: plan.seq });
        return new Journal(writer, plan.view, records);
      }
      let claimSeq: number;
      try {
        const ack = await publishRecord(js, task, 'claim', claimBody(task), 0, tailSeq);
        claimSeq = ack.seq;
      } catch (err) {
        // Someone wrote between our read and our claim: classify again from the new tail.
        if (err instanceof WrongLastSequenceError) continue;
        throw err;
      }
      const journal = new Journal(new FencedWriter(js, task, claimSeq, 1), plan.view, records);
      if (plan.view.restarts >= limit) await journal.#failForRestarts(options);
      return journal;
    }
    throw new JournalTransportError(`could not claim ${task.runId}.${task.stepId} in ${OPEN_TRIES} tries`);
  }

  /** The crash-loop guard: the claim is in; a commit{fail} ends the iteration so the journal stays whole. */
  async #failForRestarts(options: OpenOptions): Promise<never> {
    const restarts = this.#view.restarts;
    await this.#writer.commit({
      action: 'fail',
      failure_type: 'non_retriable',
      error: `restart limit reached (${restarts})`,
    });
    await options.onRestartLimit?.(this);
    throw new RestartLimitError(restarts);
  }

  /**
   * Appends a record (handlers write `entry`) with its type's body; returns its sequence. A claim
   * or a commit, or a body not of the type's shape, is a TypeError (for untyped callers).
   */
  async append<T extends AppendType>(type: T, data: BodyOf<T>): Promise<number> {
    const named: string = type;
    if (named === 'claim' || named === 'commit') {
      throw new TypeError(`append cannot write a ${named}: use Journal.open or commit()`);
    }
    assertJson(data, `${type} data`);
    const release = this.#guard.enter(type === 'entry');
    try {
      return await this.#writer.write(type, data);
    } finally {
      release();
    }
  }

  /** Ends the iteration with one record; nothing more may be written under this claim. */
  async commit(c: Commit): Promise<number> {
    if (c.output !== undefined) assertJson(c.output, 'commit output');
    if (c.wait !== undefined) assertJson(c.wait, 'commit wait');
    const release = this.#guard.enter(false);
    try {
      return await this.#writer.commit({ ...c });
    } finally {
      release();
    }
  }

  /**
   * One durable model request: the response this attempt recorded at this position is
   * returned without calling `fn`; otherwise `fn`'s response is recorded. A rejected `fn`
   * records nothing and leaves the position to the next call.
   */
  async model(fn: ModelFn): Promise<Json> {
    const release = this.#guard.enter(false);
    try {
      this.#writer.assertWritable();
      const call = this.#modelCalls;
      const recorded = this.#book.modelResponse(call);
      if (recorded) {
        this.#modelCalls++;
        return recorded.output ?? null;
      }
      const output = await fn();
      assertJson(output, 'model response');
      await this.#writer.write('model.response', { call, output });
      this.#modelCalls++;
      return output;
    } finally {
      release();
    }
  }

  /**
   * One durable tool call (see replay.ts for what answers it without running `fn`). `fn`'s
   * own failure is recorded in `result.error`, not thrown; what throws is the journal's
   * (FencedError, CommittedError, ReplayMismatchError, transport) and a `fn` output that is
   * not a JSON value (TypeError, before the result is recorded).
   */
  async tool(call: { name: string; input?: Json }, replay: Replay, fn: ToolFn): Promise<ToolResult> {
    const release = this.#guard.enter(false);
    try {
      this.#writer.assertWritable();
      const ctx = {
        writer: this.#writer,
        book: this.#book,
        guard: this.#guard,
        take: () => this.#toolCalls++,
      };
      return await callTool(ctx, this.#toolCalls, call, replay, fn);
    } finally {
      release();
    }
  }

  /** Writes the pause record; the worker then naks the task message with `ms` of delay. */
  async pause(name: string, ms: number): Promise<number> {
    if (!Number.isSafeInteger(ms) || ms < 0)
      throw new TypeError(`pause duration must be whole ms ≥ 0, got ${ms}`);
    const release = this.#guard.enter(false);
    try {
      return await this.#writer.write('pause', { name, duration_ms: ms });
    } finally {
      release();
    }
  }

  /** Places an input into the conversation. Placing a request id twice is a programmer error. */
  async placeInput(input: { requestId: string; mode: string; content?: Json }): Promise<number> {
    if (this.inputPlaced(input.requestId)) {
      throw new Error(`journal: input ${input.requestId} is already placed; check inputPlaced() first`);
    }
    if (input.content !== undefined) assertJson(input.content, 'input content');
    const body: InputPlacedBody = { request_id: input.requestId, mode: input.mode };
    if (input.content !== undefined) body.content = input.content;
    const release = this.#guard.enter(false);
    try {
      const seq = await this.#writer.write('input.placed', body);
      const placed: PlacedInput = {
        requestId: input.requestId,
        mode: input.mode,
        iteration: this.#writer.task.iteration,
      };
      if (input.content !== undefined) placed.content = input.content;
      this.#placed.push(placed);
      return seq;
    } finally {
      release();
    }
  }

  /** Whether `requestId` was placed in any iteration, by any claim (this one included). */
  inputPlaced(requestId: string): boolean {
    return this.#placed.some((p) => p.requestId === requestId);
  }
  /** Every placement in journal order, with the iteration each joined. */
  placedInputs(): PlacedInput[] {
    return this.#placed.map((p) => ({ ...p }));
  }

  /** The pause this delivery resumes, when the iteration's newest record before the claim is one. */
  resume(): { name: string; ok: boolean } {
    const p = this.#view.pause;
    return p ? { name: p.data.name, ok: true } : { name: '', ok: false };
  }

  /**
   * How much of the resumed pause is still to run at `now` (ms since the epoch), 0 when none.
   * A delivery that arrives early (a crash between the pause record and the nak, so AckWait
   * redelivered it) writes the pause again for the remainder and naks for that long.
   *
   * The pause's start is the NATS server's stamp and `now` the caller's clock, so the answer is
   * capped at the pause's own duration: a process clock running behind the server's must not
   * stretch a pause beyond what was asked (an hour of skew would add an hour).
   */
  pauseRemainingMs(now: number): number {
    const p = this.#view.pause;
    if (!p) return 0;
    const { duration_ms } = p.data;
    return Math.min(duration_ms, Math.max(0, Date.parse(p.time) + duration_ms - now));
  }

  /** Claims of this iteration that sat at the tail, with nothing between, before this claim. */
  restarts(): number {
    return this.#view.restarts;
  }
  /** How this claim replays: see `ReplayMode`. */
  mode(): ReplayMode {
    return this.#view.mode;
  }
  /**
   * Every record of the step as Open read it (earlier iterations included), in journal order:
   * a caller that builds on earlier iterations' outputs need not read the journal again.
   */
  stepRecords(): readonly JournalRecord[] {
    return this.#stepRecords;
  }
  /** This iteration's records before the claim, in journal order: what a successor may reuse. */
  records(): JournalRecord[] {
    return [...this.#view.records];
  }
  /** The state the last commit of an earlier iteration left, null when there is none. */
  state(): Uint8Array | null {
    return this.#view.state;
  }
  /** This attempt's own commit: the one Open found, or the one `commit` stored. */
  committed(): Commit | null {
    return this.#writer.committed?.commit ?? null;
  }
  /** The sequence of `committed()`, 0 when there is none. */
  committedSeq(): number {
    return this.#writer.committed?.seq ?? 0;
  }
  /** Whether a record of another claim fenced this one. */
  fenced(): boolean {
    return this.#writer.fenced;
  }
  /** The last journal sequence this writer saw. */
  seq(): number {
    return this.#writer.seq;
  }
  task(): Task {
    return { ...this.#writer.task };
  }
}
