/**
 * Reading a step's journal: a leader read of the tail, then an ordered consumer bounded by
 * that tail (an ordered consumer never ends by itself). A direct get is never used for the
 * tail: any replica may answer it and miss the latest write.
 */
import { DeliverPolicy, JetStreamApiError, type JetStreamClient, type StoredMsg } from '@nats-io/jetstream';
import { decodeMsg, fromJsMsg } from './codec.js';
import { NotProvisionedError } from './errors.js';
import { JOURNAL_STREAM, type JournalRecord, journalSubject } from './types.js';

/** The last record's stored message on the step's subject, or null for an empty journal. */
export async function readTail(
  js: JetStreamClient,
  runId: string,
  stepId: string,
): Promise<StoredMsg | null> {
  // No account-info round trip per read: the stream's absence surfaces as 10059 anyway.
  const jsm = await js.jetstreamManager(false);
  try {
    return await jsm.streams.getMessage(JOURNAL_STREAM, { last_by_subj: journalSubject(runId, stepId) });
  } catch (err) {
    throw notProvisioned(err);
  }
}

/** Every record of the step in order (`[]` when it never ran), up to the tail read at the start. */
export async function read(js: JetStreamClient, runId: string, stepId: string): Promise<JournalRecord[]> {
  const tail = await readTail(js, runId, stepId);
  if (!tail) return [];
  return readRange(js, runId, stepId, 1, tail.seq);
}

/** The step's records with `fromSeq ≤ seq ≤ toSeq`, the first `limit` of them when given. */
export async function readRange(
  js: JetStreamClient,
  runId: string,
  stepId: string,
  fromSeq: number,
  toSeq: number,
  limit = Number.POSITIVE_INFINITY,
): Promise<JournalRecord[]> {
  if (toSeq < fromSeq) return [];
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
  try {
    for await (const m of messages) {
      if (m.seq > toSeq) break;
      records.push(decodeMsg(fromJsMsg(m)));
      if (m.seq >= toSeq || records.length >= limit) break;
    }
  } finally {
    await messages.close().catch(() => {});
    await consumer.delete().catch(() => {});
  }
  return records;
}

export function notProvisioned(err: unknown): unknown {
  if (err instanceof JetStreamApiError && err.code === 10059) return new NotProvisionedError({ cause: err });
  return err;
}
