/**
 * Reading a step's journal: a leader read of the tail, then an ordered consumer bounded by
 * that tail (an ordered consumer never ends by itself). A direct get is never used for the
 * tail: any replica may answer it and miss the latest write.
 *
 * Every read fails at once with `JournalUnavailableError` while the connection is down, or
 * when it drops mid-read (link.ts): an ordered consumer would otherwise wait for a server
 * that is not there.
 */
import {
  DeliverPolicy,
  JetStreamApiError,
  type JetStreamClient,
  type JsMsg,
  type StoredMsg,
} from '@nats-io/jetstream';
import { decodeMsg, fromJsMsg } from './codec.js';
import { CorruptRecordError, NotProvisionedError } from './errors.js';
import { onLinkDown, readWhileLinkUp } from './link.js';
import { JOURNAL_STREAM, type JournalRecord, journalSubject } from './types.js';

/** The last record's stored message on the step's subject, or null for an empty journal. */
export async function readTail(
  js: JetStreamClient,
  runId: string,
  stepId: string,
): Promise<StoredMsg | null> {
  const subject = journalSubject(runId, stepId);
  return readWhileLinkUp(js, `reading the tail of ${subject}`, async () => {
    // No account-info round trip per read: the stream's absence surfaces as 10059 anyway.
    const jsm = await js.jetstreamManager(false);
    try {
      return await jsm.streams.getMessage(JOURNAL_STREAM, { last_by_subj: subject });
    } catch (err) {
      throw notProvisioned(err);
    }
  });
}

/**
 * Every record of the step in order (`[]` when it never ran), up to the tail read at the start.
 * `onCorrupt` as for `readRange`.
 */
export async function read(
  js: JetStreamClient,
  runId: string,
  stepId: string,
  onCorrupt?: (err: CorruptRecordError) => void,
): Promise<JournalRecord[]> {
  const tail = await readTail(js, runId, stepId);
  if (!tail) return [];
  return readRange(js, runId, stepId, 1, tail.seq, Number.POSITIVE_INFINITY, onCorrupt);
}

/**
 * The step's records with `fromSeq ≤ seq ≤ toSeq`, the first `limit` of them when given. A
 * record that cannot be decoded throws `CorruptRecordError`, unless `onCorrupt` takes it (and
 * it is left out).
 */
export async function readRange(
  js: JetStreamClient,
  runId: string,
  stepId: string,
  fromSeq: number,
  toSeq: number,
  limit = Number.POSITIVE_INFINITY,
  onCorrupt?: (err: CorruptRecordError) => void,
): Promise<JournalRecord[]> {
  if (toSeq < fromSeq) return [];
  return readWhileLinkUp(js, `reading ${journalSubject(runId, stepId)}`, () =>
    consumeRange(js, runId, stepId, fromSeq, toSeq, limit, onCorrupt),
  );
}

async function consumeRange(
  js: JetStreamClient,
  runId: string,
  stepId: string,
  fromSeq: number,
  toSeq: number,
  limit: number,
  onCorrupt: ((err: CorruptRecordError) => void) | undefined,
): Promise<JournalRecord[]> {
  const consumer = await js.consumers
    .get(JOURNAL_STREAM, {
      // A plain string: servers before 2.10 refuse the array form.
      filter_subjects: journalSubject(runId, stepId),
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: fromSeq,
    })
    .catch((err: unknown) => {
      throw notProvisioned(err);
    });
  const records: JournalRecord[] = [];
  const messages = await consumer.consume(
    Number.isFinite(limit) ? { max_messages: Math.min(limit, 256) } : {},
  );
  // The caller has already given up (readWhileLinkUp); ending the iteration frees the consumer.
  const cancel = onLinkDown(js, () => void messages.close().catch(() => {}));
  try {
    for await (const m of messages) {
      if (m.seq > toSeq) break;
      const record = decode(m, onCorrupt);
      if (record) records.push(record);
      if (m.seq >= toSeq || records.length >= limit) break;
    }
  } finally {
    cancel();
    await messages.close().catch(() => {});
    await consumer.delete().catch(() => {});
  }
  return records;
}

function decode(m: JsMsg, onCorrupt: ((err: CorruptRecordError) => void) | undefined): JournalRecord | null {
  if (!onCorrupt) return decodeMsg(fromJsMsg(m));
  try {
    return decodeMsg(fromJsMsg(m));
  } catch (err) {
    if (err instanceof CorruptRecordError) {
      onCorrupt(err);
      return null;
    }
    throw err;
  }
}

export function notProvisioned(err: unknown): unknown {
  if (err instanceof JetStreamApiError && err.code === 10059) return new NotProvisionedError({ cause: err });
  return err;
}
