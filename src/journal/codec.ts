/**
 * Records on the wire: headers carry the task identity (decimal strings), the body is the Go
 * struct's JSON. `commit.state` is bytes, hence base64 — exactly what Go's encoding/json does
 * with a `[]byte`. Bodies are checked against their type's shape here, both ways (bodies.ts),
 * so a decoded record's body is what its type says.
 */

import type { JsMsg, StoredMsg } from '@nats-io/jetstream';
import { headers, type MsgHdrs } from '@nats-io/nats-core';
import { toBase64 } from '../base64.js';
import {
  assertClaimBody,
  assertInputPlacedBody,
  assertModelResponseBody,
  assertPauseBody,
  assertToolIntentBody,
  assertToolResultBody,
  BODY_CHECKS,
  BodyShapeError,
  commitFromStored,
} from './bodies.js';
import { CorruptRecordError } from './errors.js';
import {
  type BodyOf,
  HEADER,
  type JournalRecord,
  type Json,
  type RecordHead,
  type RecordType,
  type Task,
} from './types.js';

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

const same = (body: unknown) => body;
const utf8 = new TextEncoder();
/** What each type's body is stored as: itself, but a commit's state as base64. */
const STORED: { readonly [T in RecordType]: (body: BodyOf<T>) => unknown } = {
  claim: same,
  entry: same,
  'model.response': same,
  'tool.intent': same,
  'tool.result': same,
  pause: same,
  'input.placed': same,
  // The state keeps its place among the fields, so a body in Go's field order is stored in it.
  commit: (commit) => {
    const { state, ...rest } = commit;
    return state === undefined ? rest : { ...commit, state: toBase64(state) };
  },
};

/**
 * The stored bytes of a body of type `type`. A body of the wrong shape (which the types let
 * through only from untyped callers) is a TypeError: written, it would make the step unreadable.
 */
export function encodeBody<T extends RecordType>(type: T, data: BodyOf<T>): Uint8Array {
  try {
    BODY_CHECKS[type](data);
  } catch (err) {
    if (err instanceof BodyShapeError) throw new TypeError(`${type} body ${err.detail}`);
    throw err;
  }
  const stored: (body: BodyOf<T>) => unknown = STORED[type];
  return utf8.encode(JSON.stringify(stored(data)));
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
 * A body that is not JSON, or not of its type's shape, throws `CorruptRecordError`: no writer of
 * ours stores one, so it names the record rather than passing on a parser's message.
 *
 * The type is the `Dagnats-Journal-Type` header; a message without one is an `entry`, whether it
 * has no headers at all or only others (the client's `get` answers '' for an absent header, so an
 * empty one reads the same). A type this reader does not know decodes as an opaque record
 * (types.ts) with any JSON body, not as corrupt: it is a newer writer's, not damage, and refusing
 * it would stop every open, read and check of its step.
 */
export function decodeMsg(msg: StoredMsg | RawJournalMsg): JournalRecord {
  const [, runId = '', stepId = ''] = msg.subject.split('.');
  const h = msg.header;
  const num = (name: string) => Number(h?.get(name) || '0');
  const type = h?.get(HEADER.type) || 'entry';
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
  let body: Json = null;
  if (text !== '') {
    try {
      body = JSON.parse(text);
    } catch (err) {
      throw new CorruptRecordError(msg.subject, msg.seq, { cause: err });
    }
  }
  const expected = h?.get('Nats-Expected-Last-Subject-Sequence');
  const head: RecordHead = {
    seq: msg.seq,
    time: msg.time.toISOString(),
    task,
    index: num(HEADER.index),
    expectedSeq: expected ? Number(expected) : null,
    msgId: h?.get('Nats-Msg-Id') || null,
  };
  try {
    return typed(type, body, head);
  } catch (err) {
    if (err instanceof BodyShapeError) {
      throw new CorruptRecordError(msg.subject, msg.seq, { type, detail: err.detail });
    }
    throw err;
  }
}

/** The record of `type` with `body`, once the body is checked to be that type's. */
function typed(type: string, body: Json, head: RecordHead): JournalRecord {
  switch (type) {
    case 'claim':
      assertClaimBody(body);
      return { ...head, type, data: body };
    case 'entry':
      return { ...head, type, data: body };
    case 'model.response':
      assertModelResponseBody(body);
      return { ...head, type, data: body };
    case 'tool.intent':
      assertToolIntentBody(body);
      return { ...head, type, data: body };
    case 'tool.result':
      assertToolResultBody(body);
      return { ...head, type, data: body };
    case 'pause':
      assertPauseBody(body);
      return { ...head, type, data: body };
    case 'input.placed':
      assertInputPlacedBody(body);
      return { ...head, type, data: body };
    case 'commit':
      return { ...head, type, data: commitFromStored(body) };
    default:
      return { ...head, type: 'opaque', storedType: type, data: body };
  }
}
