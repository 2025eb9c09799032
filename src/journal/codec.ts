/**
 * Records on the wire: headers carry the task identity (decimal strings), the body is the Go
 * struct's JSON. `commit.state` is bytes, hence base64 — exactly what Go's encoding/json does
 * with a `[]byte`.
 */

import type { JsMsg, StoredMsg } from '@nats-io/jetstream';
import { headers, type MsgHdrs } from '@nats-io/nats-core';
import { fromBase64, toBase64 } from '../base64.js';
import { CorruptRecordError } from './errors.js';
import { type Commit, HEADER, type JournalRecord, type Json, type RecordType, type Task } from './types.js';

export function recordHeaders(type: RecordType, task: Task, index: number): MsgHdrs {
  const h = headers();
  h.set(HEADER.type, type);
  h.set(HEADER.iteration, String(task.iteration));
  h.set(HEADER.attempt, String(task.attempt));
  if (task.dispatchNonce) h.set(HEADER.nonce, task.dispatchNonce);
  h.set(HEADER.delivered, String(task.delivered));
  h.set(HEADER.streamSeq, String(task.streamSeq ?? 0));
  h.set(HEADER.index, String(index));
  return h;
}

export function encodeBody(type: RecordType, data: Json | Commit): Uint8Array {
  let value: unknown = data;
  if (type === 'commit') {
    const { state, ...rest } = data as Commit;
    value = state === undefined ? rest : { ...rest, state: toBase64(state) };
  }
  return new TextEncoder().encode(JSON.stringify(value));
}

/** The parts of a stored or consumed message a record is decoded from. */
export interface RawJournalMsg {
  subject: string;
  seq: number;
  time: Date;
  header?: MsgHdrs;
  data: Uint8Array;
}

/** A consumed message (`JsMsg`) in the shape `decodeMsg` reads. */
export function fromJsMsg(m: JsMsg): RawJournalMsg {
  return {
    subject: m.subject,
    seq: m.seq,
    time: new Date(m.info.timestampNanos / 1e6),
    header: m.headers,
    data: m.data,
  };
}

/**
 * Decodes a stored journal message into a record (the inverse of `recordHeaders` + `encodeBody`).
 * A body that is not JSON throws `CorruptRecordError`: no writer of ours stores one, so it
 * names the record rather than passing on a parser's message.
 */
export function decodeMsg(msg: StoredMsg | RawJournalMsg): JournalRecord {
  const [, runId = '', stepId = ''] = msg.subject.split('.');
  const h = msg.header;
  const num = (name: string) => Number(h?.get(name) || '0');
  const type = (h?.get(HEADER.type) ?? 'entry') as RecordType;
  const task: Task = {
    runId,
    stepId,
    iteration: num(HEADER.iteration),
    attempt: num(HEADER.attempt),
    delivered: num(HEADER.delivered),
    streamSeq: num(HEADER.streamSeq),
  };
  const nonce = h?.get(HEADER.nonce);
  if (nonce) task.dispatchNonce = nonce;
  const text = new TextDecoder().decode(msg.data);
  let data: Json | Commit = null;
  if (text !== '') {
    try {
      data = JSON.parse(text) as Json;
    } catch (err) {
      throw new CorruptRecordError(msg.subject, msg.seq, { cause: err });
    }
  }
  if (type === 'commit' && data && typeof data === 'object' && !Array.isArray(data)) {
    const body = data as Record<string, Json>;
    data = { ...body, state: typeof body.state === 'string' ? fromBase64(body.state) : undefined } as Commit;
    if ((data as Commit).state === undefined) delete (data as Commit).state;
  }
  const expected = h?.get('Nats-Expected-Last-Subject-Sequence');
  return {
    seq: msg.seq,
    time: msg.time.toISOString(),
    type,
    task,
    index: num(HEADER.index),
    data,
    expectedSeq: expected ? Number(expected) : null,
    msgId: h?.get('Nats-Msg-Id') || null,
  };
}
