/**
 * Journals built record by record with the codec, byte-identical to what the writer publishes
 * (headers, body, MsgID, expected last-subject seq), without depending on the writer. A test can
 * also publish without the fence, to plant the violations Check must find.
 */
import type { JetStreamClient } from '@nats-io/jetstream';
import { encodeBody, recordHeaders } from '../../src/journal/codec.js';
import {
  type BodyOf,
  type Commit,
  journalSubject,
  msgId,
  type RecordType,
  type Task,
} from '../../src/journal/types.js';

/** A task with defaults: iteration 0, attempt 1, first delivery of task message 10. */
export function task(runId: string, stepId: string, overrides: Partial<Task> = {}): Task {
  return { runId, stepId, iteration: 0, attempt: 1, delivered: 1, streamSeq: 10, ...overrides };
}

export interface RawJournal {
  /** The seq of the last record on the subject, as the writer tracks it. */
  readonly tail: number;
  /** Publishes one record under `task` and returns its seq; `unfenced` leaves out the fence. */
  write<T extends RecordType>(
    type: T,
    task: Task,
    body: BodyOf<T>,
    options?: { unfenced?: boolean },
  ): Promise<number>;
  /** The claim record of `task` (index 0 of its claim). */
  claim(task: Task, options?: { unfenced?: boolean }): Promise<number>;
  commit(task: Task, commit: Commit): Promise<number>;
}

export function rawJournal(js: JetStreamClient, runId: string, stepId: string): RawJournal {
  let tail = 0;
  // The next index of each claim: a claim is index 0, each later record of its writer + 1.
  const indexes = new Map<string, number>();
  const claimKey = (t: Task) => `${t.iteration}/${t.attempt}/${t.streamSeq ?? 0}/${t.delivered}`;
  const journal: RawJournal = {
    get tail() {
      return tail;
    },
    async write(type, t, body, options = {}) {
      const key = claimKey(t);
      const index = type === 'claim' ? 0 : (indexes.get(key) ?? 0);
      const ack = await js.publish(journalSubject(runId, stepId), encodeBody(type, body), {
        headers: recordHeaders(type, t, index),
        msgID: msgId(t, index),
        ...(options.unfenced ? {} : { expect: { lastSubjectSequence: tail } }),
      });
      indexes.set(key, index + 1);
      tail = ack.seq;
      return ack.seq;
    },
    claim: (t, options) =>
      journal.write(
        'claim',
        t,
        {
          iteration: t.iteration,
          attempt: t.attempt,
          delivered: t.delivered,
          ...(t.dispatchNonce ? { dispatch_nonce: t.dispatchNonce } : {}),
          ...(t.streamSeq ? { stream_seq: t.streamSeq } : {}),
        },
        options,
      ),
    commit: (t, commit) => journal.write('commit', t, commit),
  };
  return journal;
}

/**
 * A run with what the console's step page and the journal routes must show and mark: on
 * `agent`, a claim fenced by a second attempt, an unsafe tool interrupted across the takeover
 * and a commit (with `state` when given); on `broken`, an unsafe tool that never got a result
 * before its commit (a violation `check()` reports).
 */
export async function seedMarkedJournal(
  js: JetStreamClient,
  runId: string,
  options: { state?: Uint8Array } = {},
): Promise<void> {
  const agent = rawJournal(js, runId, 'agent');
  const first = task(runId, 'agent');
  await agent.claim(first);
  await agent.write('tool.intent', first, {
    name: 'deploy',
    call: 1,
    key: 'k1',
    input: {},
    replay: 'unsafe',
  });
  const second = task(runId, 'agent', { attempt: 2, streamSeq: 11 });
  await agent.claim(second);
  await agent.write('tool.result', second, { call: 1, key: 'k1', error: 'interrupted', interrupted: true });
  await agent.commit(second, { action: 'complete', ...(options.state ? { state: options.state } : {}) });
  const broken = rawJournal(js, runId, 'broken');
  const only = task(runId, 'broken');
  await broken.claim(only);
  await broken.write('tool.intent', only, {
    name: 'charge',
    call: 1,
    key: 'k9',
    input: {},
    replay: 'unsafe',
  });
  await broken.commit(only, { action: 'complete' });
}
