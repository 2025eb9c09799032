import {
  AckPolicy,
  JetStreamApiError,
  type JetStreamClient,
  type JsMsg,
  jetstream,
  jetstreamManager,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/nats-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { encodeBody, recordHeaders } from '../../src/journal/codec.js';
import { CommittedError, FencedError, JournalTransportError } from '../../src/journal/errors.js';
import { Journal } from '../../src/journal/journal.js';
import { OutcomeUnknownError } from '../../src/journal/publish.js';
import { read } from '../../src/journal/read.js';
import { HEADER, JOURNAL_STREAM, journalSubject, msgId, type Task } from '../../src/journal/types.js';
import {
  connectJs,
  countingTool,
  provisionJournal,
  rawPublish,
  recordCount,
  recordTypes,
  STEP,
  taskOf,
  uniqueRun,
} from '../helpers/journal.js';
import { freezeServer, useNatsServer } from '../helpers/nats.js';

describe('Journal.append: the fenced write', () => {
  const nats = useNatsServer();
  beforeAll(() => provisionJournal(nats));

  it('every record carries the seven headers, MsgID(task, index) and the previous seq as its fence', async () => {
    const { js, nc } = await connectJs(nats);
    const run = uniqueRun();
    const t = taskOf(run, { dispatchNonce: 'n7', iteration: 3, attempt: 2, delivered: 4, streamSeq: 42 });
    const j = await Journal.open(js, t);
    await j.append('entry', { a: 1 });
    // Writes to other subjects in between do not matter: the fence is per subject.
    await js.publish(journalSubject(run, 'other'), 'x');
    await j.append('entry', { a: 2 });
    await j.commit({ action: 'complete' });

    const jsm = await jetstreamManager(nc);
    const records = await read(js, run, STEP);
    expect(records.map((r) => r.type)).toEqual(['claim', 'entry', 'entry', 'commit']);
    let previous = 0;
    for (const [index, r] of records.entries()) {
      const stored = await jsm.streams.getMessage(JOURNAL_STREAM, { seq: r.seq });
      const h = stored!.header;
      expect({
        type: h.get(HEADER.type),
        iteration: h.get(HEADER.iteration),
        attempt: h.get(HEADER.attempt),
        nonce: h.get(HEADER.nonce),
        delivered: h.get(HEADER.delivered),
        streamSeq: h.get(HEADER.streamSeq),
        index: h.get(HEADER.index),
        msgId: h.get('Nats-Msg-Id'),
        expected: h.get('Nats-Expected-Last-Subject-Sequence'),
      }).toEqual({
        type: r.type,
        iteration: '3',
        attempt: '2',
        nonce: 'n7',
        delivered: '4',
        streamSeq: '42',
        index: String(index),
        msgId: msgId(t, index),
        expected: String(previous),
      });
      previous = r.seq;
    }
    expect(j.seq()).toBe(previous);
  });

  it('the identical message published twice is answered duplicate with the same seq, and stored once', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const t = taskOf(run);
    const j = await Journal.open(js, t);
    const claimSeq = j.seq();
    const seq = await j.append('entry', { step: 'one' });

    // What a resend after a lost PubAck sends: the same id, fence and bytes.
    const again = await rawPublish(js, t, 'entry', { step: 'one' }, 1, claimSeq);
    expect(again).toMatchObject({ seq, duplicate: true });
    expect(await recordTypes(js, run)).toEqual(['claim', 'entry']);
    await j.append('entry', { step: 'two' });
    expect(await recordTypes(js, run)).toEqual(['claim', 'entry', 'entry']);
  });

  it('a PubAck lost while the server is frozen is resent identically and the record is stored once', async () => {
    const nc = await nats.connect();
    const js = jetstream(nc, { timeout: 300 });
    const run = uniqueRun();
    const j = await Journal.open(js, taskOf(run));
    await freezeServer(nats.pid);
    // Thawed after the first publish timed out (300 ms) and before the third would (900 ms).
    const thaw = setTimeout(() => process.kill(nats.pid, 'SIGCONT'), 450);
    try {
      const started = performance.now();
      const seq = await j.append('entry', { once: true });
      expect(performance.now() - started).toBeGreaterThanOrEqual(300);
      const records = await read(js, run, STEP);
      expect(records.map((r) => r.type)).toEqual(['claim', 'entry']);
      expect(records[1]!.seq).toBe(seq);
    } finally {
      clearTimeout(thaw);
      process.kill(nats.pid, 'SIGCONT');
    }
    await j.append('entry', { next: true });
    expect(await recordTypes(js, run)).toEqual(['claim', 'entry', 'entry']);
  });

  it('a write left unanswered by every resend makes the handle refuse further writes', async () => {
    const nc = await nats.connect();
    const js = jetstream(nc, { timeout: 150 });
    const run = uniqueRun();
    const j = await Journal.open(js, taskOf(run));
    await freezeServer(nats.pid);
    try {
      await expect(j.append('entry', { maybe: true })).rejects.toThrow(OutcomeUnknownError);
    } finally {
      process.kill(nats.pid, 'SIGCONT');
    }
    // The record did land: writing index 1 again would be answered "duplicate" for other data.
    await expect(j.append('entry', { other: true })).rejects.toThrow(JournalTransportError);
    const records = await read(js, run, STEP);
    expect(records.map((r) => r.data)).toEqual([expect.anything(), { maybe: true }]);
  });

  it('a 10071 caused by another claim fences the writer for good, and later calls do no I/O', async () => {
    const a = await connectJs(nats);
    const b = await connectJs(nats);
    const run = uniqueRun();
    const d1 = await Journal.open(a.js, taskOf(run, { delivered: 1 }));
    await Journal.open(b.js, taskOf(run, { delivered: 2 }));

    await expect(d1.append('entry', { x: 1 })).rejects.toThrow(FencedError);
    expect(d1.fenced()).toBe(true);
    // With its connection closed, any I/O would fail as a transport error, not FencedError.
    await a.nc.close();
    const tool = countingTool();
    await expect(d1.append('entry', { x: 2 })).rejects.toThrow(FencedError);
    await expect(d1.tool({ name: 't' }, 'safe', tool.fn)).rejects.toThrow(FencedError);
    await expect(d1.model(async () => 'x')).rejects.toThrow(FencedError);
    await expect(d1.commit({ action: 'complete' })).rejects.toThrow(FencedError);
    await expect(d1.pause('p', 1)).rejects.toThrow(FencedError);
    expect(tool.runs()).toBe(0);
    expect(await recordTypes(b.js, run)).toEqual(['claim', 'claim']);
  });

  it("a 10071 where only the writer's own records follow is retried after them, unfenced", async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const t = taskOf(run);
    const j = await Journal.open(js, t);
    // A record of this very claim the handle does not know about (another index).
    const planted = await rawPublish(js, t, 'entry', { planted: true }, 7, j.seq());

    const seq = await j.append('entry', { mine: true });
    expect(j.fenced()).toBe(false);
    const records = await read(js, run, STEP);
    expect(records.map((r) => r.type)).toEqual(['claim', 'entry', 'entry']);
    expect(records[2]).toMatchObject({ seq, expectedSeq: planted.seq, data: { mine: true } });
  });

  it('a foreign record of an earlier iteration does not fence; one of a later iteration does', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const t = taskOf(run, { iteration: 1 });
    const j = await Journal.open(js, t);
    const older = await rawPublish(js, taskOf(run, { iteration: 0, delivered: 9 }), 'entry', {}, 1, j.seq());
    await j.append('entry', { after: 'older' });
    expect(j.fenced()).toBe(false);

    const later = taskOf(run, { iteration: 2 });
    await rawPublish(
      js,
      later,
      'claim',
      { iteration: 2, attempt: later.attempt, delivered: later.delivered },
      0,
      j.seq(),
    );
    await expect(j.append('entry', { after: 'later' })).rejects.toThrow(FencedError);
    expect((await read(js, run, STEP)).filter((r) => r.seq > older.seq).map((r) => r.task.iteration)).toEqual(
      [1, 2],
    );
  });

  it('a stalled holder is fenced by its AckWait redelivery, which commits', async () => {
    const { js, nc } = await connectJs(nats);
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: 'TASKS', subjects: ['task.>'] });
    await jsm.consumers.add('TASKS', {
      durable_name: 'agents',
      ack_policy: AckPolicy.Explicit,
      ack_wait: nanos(1_000),
    });
    const run = uniqueRun();
    await js.publish('task.agent', JSON.stringify({ run_id: run, step_id: STEP, iteration: 0, attempt: 1 }));
    const consumer = await js.consumers.get('TASKS', 'agents');
    const taskFrom = (m: JsMsg): Task => ({
      ...taskOf(run),
      delivered: m.info.deliveryCount,
      streamSeq: m.info.streamSequence,
    });

    const first = await consumer.next({ expires: 2_000 });
    const holderA = await Journal.open(js, taskFrom(first!));
    await holderA.append('entry', { by: 'A' });
    // A stalls without working(): after AckWait (1 s) the server redelivers to B.
    const redelivery = await consumer.next({ expires: 5_000 });
    expect(redelivery!.info.deliveryCount).toBe(2);
    const holderB = await Journal.open(js, taskFrom(redelivery!));
    await holderB.append('entry', { by: 'B' });
    await holderB.commit({ action: 'complete' });
    await redelivery!.ackAck();

    await expect(holderA.append('entry', { by: 'A', late: true })).rejects.toThrow(FencedError);
    const records = await read(js, run, STEP);
    expect(records.map((r) => `${r.type}@d${r.task.delivered}`)).toEqual([
      'claim@d1',
      'entry@d1',
      'claim@d2',
      'entry@d2',
      'commit@d2',
    ]);
    expect((await jsm.consumers.info('TASKS', 'agents')).num_ack_pending).toBe(0);
  });

  it('two claims with one MsgID but different delivered are deduplicated: why delivered is in the id', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const subject = journalSubject(run, STEP);
    const d1 = taskOf(run, { delivered: 1 });
    const d2 = taskOf(run, { delivered: 2 });
    const idWithoutDelivery = `${run}.${STEP}.1.0.10.0`;
    const publish = (t: Task, id: string) => rawPublishWithId(js, subject, t, id);

    const first = await publish(d1, idWithoutDelivery);
    const second = await publish(d2, idWithoutDelivery);
    expect(second).toEqual({ ...first, duplicate: true });
    expect(await recordCount(js, run)).toBe(1);

    // With the real MsgID the successor is told the truth: the fence refused it.
    const err = await publish(d2, msgId(d2, 0)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JetStreamApiError);
    expect((err as JetStreamApiError).code).toBe(10071);
  });

  it('appending after commit throws CommittedError and writes nothing', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const j = await Journal.open(js, taskOf(run));
    const seq = await j.commit({ action: 'continue', output: 'done' });
    expect(j.committed()).toEqual({ action: 'continue', output: 'done' });
    expect(j.committedSeq()).toBe(seq);

    const tool = countingTool();
    await expect(j.append('entry', { late: true })).rejects.toThrow(CommittedError);
    await expect(j.commit({ action: 'complete' })).rejects.toThrow(CommittedError);
    await expect(j.tool({ name: 't' }, 'unsafe', tool.fn)).rejects.toThrow(CommittedError);
    await expect(j.placeInput({ requestId: 'r', mode: 'queue' })).rejects.toThrow(CommittedError);
    expect(tool.runs()).toBe(0);
    expect(await recordTypes(js, run)).toEqual(['claim', 'commit']);
  });

  it('append and commit refuse a body not of its type’s shape with a TypeError before any I/O, and the handle goes on', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const j = await Journal.open(js, taskOf(run));
    // Untyped callers only: the types refuse these bodies already.
    await expect(j.append('tool.result', { call: 0 } as never)).rejects.toThrow(
      new TypeError('tool.result body needs "key" to be a string (found none)'),
    );
    await expect(j.append('pause', { name: 'p', duration_ms: '5' } as never)).rejects.toThrow(TypeError);
    await expect(j.commit({ action: 'done' } as never)).rejects.toThrow(TypeError);
    expect(j.committed()).toBeNull();
    expect(await recordTypes(js, run)).toEqual(['claim']);
    await j.append('entry', { still: 'writable' });
    expect(await recordTypes(js, run)).toEqual(['claim', 'entry']);
  });

  it('append refuses claim and commit records and non-JSON data before any I/O', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const j = await Journal.open(js, taskOf(run));
    // The types refuse both as well; an untyped caller meets the same refusal at run time.
    // @ts-expect-error a claim is Journal.open's to write
    await expect(j.append('claim', {})).rejects.toThrow(TypeError);
    // @ts-expect-error a commit is commit()'s to write
    await expect(j.append('commit', { action: 'fail' })).rejects.toThrow(TypeError);
    await expect(j.append('entry', { n: Number.NaN })).rejects.toThrow(TypeError);
    await expect(j.append('entry', new Map() as never)).rejects.toThrow(TypeError);
    expect(await recordTypes(js, run)).toEqual(['claim']);
  });
});

/** A claim published with an arbitrary msg id, expecting an empty subject. */
function rawPublishWithId(js: JetStreamClient, subject: string, t: Task, id: string) {
  return js.publish(subject, encodeBody('claim', { iteration: 0, attempt: 1, delivered: t.delivered }), {
    headers: recordHeaders('claim', t, 0),
    msgID: id,
    expect: { lastSubjectSequence: 0 },
  });
}
