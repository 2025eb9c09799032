/**
 * Reading a step's journal: a leader read of the tail, then an ordered consumer bounded by
 * that tail (an ordered consumer never ends by itself). A direct get is never used for the
 * tail: any replica may answer it and miss the latest write.
 *
 * Every read fails at once with `JournalUnavailableError` while the connection is down, or
 * when it drops mid-read (link.ts): an ordered consumer would otherwise wait for a server
 * that is not there. It fails too when the records stop coming while the connection stays up
 * (`READ_STALL_MS`): a replicated stream that lost its leader mid-read.
 */
import {
  DeliverPolicy,
  JetStreamApiError,
  type JetStreamClient,
  type JsMsg,
  type StoredMsg,
} from '@nats-io/jetstream';
import { decodeMsg, fromJsMsg } from './codec.js';
import { CorruptRecordError, JournalUnavailableError, NotProvisionedError } from './errors.js';
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

/**
 * The longest a range read waits for its next record. Every record up to the end of the range
 * exists (the tail was read first), so a wait this long means the stream lost its leader (a
 * cluster node died) mid-read. The ordered consumer would notice only after two missed idle
 * heartbeats (30 s by default), and then recreate itself until a leader is back.
 */
export const READ_STALL_MS = 5_000;

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
  let stalled = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const awaitNext = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      stalled = true;
      void messages.close().catch(() => {});
    }, READ_STALL_MS);
  };
  let whole = false;
  try {
    awaitNext();
    for await (const m of messages) {
      awaitNext();
      if (m.seq > toSeq) {
        whole = true;
        break;
      }
      const record = decode(m, onCorrupt);
      if (record) records.push(record);
      if (m.seq >= toSeq || records.length >= limit) {
        whole = true;
        break;
      }
    }
  } finally {
    clearTimeout(timer);
    cancel();
    await messages.close().catch(() => {});
    // After a stall the delete would wait out its own timeout on the leaderless stream too;
    // the server drops an ordered consumer left behind once it is inactive.
    const deleting = consumer.delete().catch(() => {});
    if (!stalled) await deleting;
  }
  if (stalled && !whole) {
    throw new JournalUnavailableError(
      `reading ${journalSubject(runId, stepId)}: no record for ${READ_STALL_MS} ms (the stream has no leader?)`,
    );
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
