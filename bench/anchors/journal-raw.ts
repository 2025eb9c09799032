/**
 * The journal-append anchor: plain JetStream publishes carrying the same fence a journal write
 * does, with none of the journal around them. Each append publishes one record to
 * `journal.{run}.{step}` with
 *
 * - the seven task headers a record carries (type, iteration, attempt, dispatch nonce,
 *   delivered, stream seq, index), the same names and values,
 * - `Nats-Msg-Id` = `{run}.{step}.{attempt}.{iteration}.{stream_seq}.{delivered}.{index}`,
 * - `Nats-Expected-Last-Subject-Sequence` = the sequence of this writer's previous record,
 *
 * and awaits its PubAck before the next. It is written against the client alone (no import
 * from src/journal): it is what an application would write by hand for the same guarantee,
 * less the journal's re-read on a refused write, which a benchmark never triggers.
 */
import type { JetStreamClient } from '@nats-io/jetstream';
import { headers } from '@nats-io/nats-core';

export interface RawTask {
  runId: string;
  stepId: string;
  iteration: number;
  attempt: number;
  dispatchNonce: string;
  delivered: number;
  streamSeq: number;
}

const encoder = new TextEncoder();

export class RawFencedAppender {
  readonly subject: string;
  #lastSeq = 0;
  #index: number;

  /** `firstIndex` 1 leaves index 0 to a claim, as a journal's first append does. */
  constructor(
    private readonly js: JetStreamClient,
    readonly task: RawTask,
    firstIndex = 1,
  ) {
    this.subject = `journal.${task.runId}.${task.stepId}`;
    this.#index = firstIndex;
  }

  /** Publishes one record fenced on the previous one; returns its stream sequence. */
  async append(type: string, body: unknown): Promise<number> {
    const t = this.task;
    const index = this.#index;
    // Fresh headers per publish: the client adds the msg-id and expect headers to the object.
    const h = headers();
    h.set('Dagnats-Journal-Type', type);
    h.set('Dagnats-Journal-Iteration', String(t.iteration));
    h.set('Dagnats-Journal-Attempt', String(t.attempt));
    h.set('Dagnats-Dispatch-Nonce', t.dispatchNonce);
    h.set('Dagnats-Journal-Delivered', String(t.delivered));
    h.set('Dagnats-Journal-Stream-Seq', String(t.streamSeq));
    h.set('Dagnats-Journal-Index', String(index));
    const ack = await this.js.publish(this.subject, encoder.encode(JSON.stringify(body)), {
      headers: h,
      msgID: `${t.runId}.${t.stepId}.${t.attempt}.${t.iteration}.${t.streamSeq}.${t.delivered}.${index}`,
      expect: { lastSubjectSequence: this.#lastSeq },
    });
    this.#lastSeq = ack.seq;
    this.#index = index + 1;
    return ack.seq;
  }

  get lastSeq(): number {
    return this.#lastSeq;
  }
}
