/**
 * One page of a step's journal, for readers that resume from a cursor (the platform API). The
 * cursor is a record's stream seq: the page holds the records after it, at most `limit` of them,
 * bounded by the tail read at the start so the read always ends.
 */
import { DeliverPolicy, type JetStreamClient } from '@nats-io/jetstream';
import { decodeMsg, fromJsMsg } from './codec.js';
import { notProvisioned, readTail } from './read.js';
import { JOURNAL_STREAM, type JournalRecord, journalSubject } from './types.js';

export interface JournalPage {
  records: JournalRecord[];
  /** The cursor for the next page; null when this page reached the tail. */
  nextAfterSeq: number | null;
}

export async function readPage(
  js: JetStreamClient,
  runId: string,
  stepId: string,
  afterSeq: number,
  limit: number,
): Promise<JournalPage> {
  const tail = await readTail(js, runId, stepId);
  // Past the tail an ordered consumer would wait for a message forever.
  if (!tail || tail.seq <= afterSeq) return { records: [], nextAfterSeq: null };
  const consumer = await js.consumers
    .get(JOURNAL_STREAM, {
      // A plain string: servers before 2.10 refuse the array form.
      filter_subjects: journalSubject(runId, stepId),
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: afterSeq + 1,
    })
    .catch((err: unknown) => {
      throw notProvisioned(err);
    });
  const records: JournalRecord[] = [];
  const messages = await consumer.consume({ max_messages: Math.min(limit, 256) });
  try {
    for await (const m of messages) {
      if (m.seq > tail.seq) break;
      records.push(decodeMsg(fromJsMsg(m)));
      if (m.seq >= tail.seq || records.length >= limit) break;
    }
  } finally {
    await messages.close().catch(() => {});
    await consumer.delete().catch(() => {});
  }
  const last = records[records.length - 1];
  return { records, nextAfterSeq: last && last.seq < tail.seq ? last.seq : null };
}
