/**
 * The fenced append of one claim (docs/journal.md, "The fenced append"): every record after the claim goes
 * through `write`, which carries the writer's last seen sequence as the fence and the
 * record's index in the claim as part of its dedup id.
 *
 * A rejected write (10071) is not fencing by itself. The writer re-reads what follows its last
 * sequence: a record of another claim of this or a later iteration fences it for good; its own
 * record at the index it is writing means an earlier, unanswered publish landed (a resend
 * after the dedup window); only its own other records mean it simply retries after them.
 */
import type { JetStreamClient } from '@nats-io/jetstream';
import { identityKey } from './claim-rank.js';
import { encodeBody } from './codec.js';
import { CommittedError, FencedError, JournalTransportError } from './errors.js';
import { OutcomeUnknownError, publishRecord, WrongLastSequenceError } from './publish.js';
import { readRange, readTail } from './read.js';
import type { BodyOf, Commit, JournalRecord, RecordType, Task } from './types.js';

/** What a writer writes after its claim: every type but the claim (Journal.open writes it). */
export type WrittenType = Exclude<RecordType, 'claim'>;

/** Re-reads after a 10071 before giving up: each one means the journal moved under us. */
const MAX_REREADS = 5;

export class FencedWriter {
  #seq: number;
  #index: number;
  #fenced = false;
  #committed: { commit: Commit; seq: number } | null = null;
  #broken: OutcomeUnknownError | null = null;

  constructor(
    private readonly js: JetStreamClient,
    readonly task: Task,
    seq: number,
    nextIndex: number,
    committed: { commit: Commit; seq: number } | null = null,
  ) {
    this.#seq = seq;
    this.#index = nextIndex;
    this.#committed = committed;
  }

  get seq(): number {
    return this.#seq;
  }
  get fenced(): boolean {
    return this.#fenced;
  }
  get committed(): { commit: Commit; seq: number } | null {
    return this.#committed;
  }

  /** Throws, without I/O, when nothing more may be written under this claim. */
  assertWritable(): void {
    if (this.#fenced) throw new FencedError();
    if (this.#committed) throw new CommittedError();
    if (this.#broken) {
      throw new JournalTransportError('an earlier write may or may not be stored; this handle cannot write', {
        cause: this.#broken,
      });
    }
  }

  async commit(c: Commit): Promise<number> {
    const seq = await this.write('commit', c);
    this.#committed = { commit: c, seq };
    return seq;
  }

  /** Appends one record of `type`, whose body must be that type's (encodeBody checks it too). */
  async write<T extends WrittenType>(type: T, data: BodyOf<T>): Promise<number> {
    this.assertWritable();
    const body = encodeBody(type, data);
    for (let reread = 0; ; reread++) {
      try {
        const ack = await publishRecord(this.js, this.task, type, body, this.#index, this.#seq);
        // `duplicate: true` is success too: the id names this very record.
        return this.#landed(ack.seq);
      } catch (err) {
        if (err instanceof OutcomeUnknownError) {
          // The next record would reuse this index, and a dedup hit would then report the
          // wrong record as written: refuse everything from here on.
          this.#broken = err;
          throw err;
        }
        if (!(err instanceof WrongLastSequenceError)) throw err;
        if (reread >= MAX_REREADS) {
          throw new JournalTransportError(`the journal kept moving after ${MAX_REREADS} re-reads`, {
            cause: err,
          });
        }
      }
      const newer = await this.#readAfterSeq();
      if (
        newer.some(
          (r) => identityKey(r.task) !== identityKey(this.task) && r.task.iteration >= this.task.iteration,
        )
      ) {
        this.#fenced = true;
        throw new FencedError();
      }
      const mine = newer.find(
        (r) => identityKey(r.task) === identityKey(this.task) && r.index === this.#index,
      );
      if (mine) return this.#landed(mine.seq);
      const last = newer.at(-1);
      if (!last) {
        // 10071 with nothing after our sequence: the subject's tail is behind this writer,
        // which only a purge or a stream limit dropping its records does. The fence is gone;
        // do not write through it.
        throw new JournalTransportError(`journal tail is behind sequence ${this.#seq} (purged?)`);
      }
      this.#seq = last.seq;
    }
  }

  #landed(seq: number): number {
    this.#seq = seq;
    this.#index += 1;
    return seq;
  }

  async #readAfterSeq(): Promise<JournalRecord[]> {
    const tail = await readTail(this.js, this.task.runId, this.task.stepId);
    if (!tail || tail.seq <= this.#seq) return [];
    return readRange(this.js, this.task.runId, this.task.stepId, this.#seq + 1, tail.seq);
  }
}
