/**
 * One page of a step's journal, for readers that resume from a cursor (the platform API). The
 * cursor is a record's stream seq: the page holds the records after it, at most `limit` of them,
 * bounded by the tail read at the start so the read always ends.
 */
import type { JetStreamClient } from '@nats-io/jetstream';
import { readRange, readTail } from './read.js';
import type { JournalRecord } from './types.js';

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
  const records = await readRange(js, runId, stepId, afterSeq + 1, tail.seq, limit);
  const last = records[records.length - 1];
  return { records, nextAfterSeq: last && last.seq < tail.seq ? last.seq : null };
}
