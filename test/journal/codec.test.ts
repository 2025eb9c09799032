/**
 * The codec against records as another writer stores them: the bytes a Go writer publishes
 * (its field order, omitempty, base64 state) decode to each type's body and encode back to the
 * same bytes; a body of the wrong shape is a CorruptRecordError naming the record, which
 * check() reports; a type this reader does not know stays readable.
 */
import { type JetStreamClient, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { beforeAll, describe, expect, it } from 'vitest';
import { toWireRecord } from '../../src/api/routes/journal-wire.js';
import { check } from '../../src/journal/check.js';
import { encodeBody, recordHeaders } from '../../src/journal/codec.js';
import { CorruptRecordError } from '../../src/journal/errors.js';
import { Journal } from '../../src/journal/journal.js';
import { read } from '../../src/journal/read.js';
import { ensureJournalStream } from '../../src/journal/stream.js';
import { HEADER, type JournalRecord, journalSubject, msgId, type Task } from '../../src/journal/types.js';
import { useNatsServer } from '../helpers/nats.js';
import { task } from '../helpers/raw-journal.js';

/** Publishes `json` verbatim as a record of `type` (any header value), fenced on `after`. */
async function put(
  js: JetStreamClient,
  t: Task,
  type: string,
  json: string,
  index: number,
  after: number,
): Promise<number> {
  const h = recordHeaders('entry', t, index);
  h.set(HEADER.type, type);
  const ack = await js.publish(journalSubject(t.runId, t.stepId), new TextEncoder().encode(json), {
    headers: h,
    msgID: msgId(t, index),
    expect: { lastSubjectSequence: after },
  });
  return ack.seq;
}

/** Go's bytes for a claim of `t`: its field order, the nonce and stream_seq omitted when empty. */
function goClaim(t: Task): string {
  const nonce = t.dispatchNonce ? `,"dispatch_nonce":"${t.dispatchNonce}"` : '';
  const seq = t.streamSeq ? `,"stream_seq":${t.streamSeq}` : '';
  return `{"iteration":${t.iteration},"attempt":${t.attempt}${nonce},"delivered":${t.delivered}${seq}}`;
}

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

describe('the codec: each record type’s body, checked once', () => {
  const nats = useNatsServer();

  beforeAll(async () => {
    await ensureJournalStream(await jetstreamManager(await nats.connect()));
  });

  async function connect() {
    const nc = await nats.connect();
    return { nc, js: jetstream(nc) };
  }

  it('a Go-written record of every type decodes to its typed body and encodes back to the same bytes', async () => {
    const { nc, js } = await connect();
    const it0 = task('go', 'agent', { dispatchNonce: 'n0' });
    const it1 = task('go', 'agent', { iteration: 1, streamSeq: 11 });
    const records: [Task, string, string][] = [
      [it0, 'claim', goClaim(it0)],
      [it0, 'entry', '{"note":"é ✓","n":[1,2.5,null,true]}'],
      [it0, 'input.placed', '{"request_id":"r1","mode":"queue","content":"hello"}'],
      [it0, 'model.response', '{"call":0,"output":{"content":[{"type":"text","text":"hi"}]}}'],
      [
        it0,
        'tool.intent',
        '{"name":"deploy","input":{"env":"prod"},"call":0,"key":"go.agent.0.0","replay":"unsafe"}',
      ],
      [it0, 'tool.result', '{"call":0,"key":"go.agent.0.0","output":{"ok":true}}'],
      [
        it0,
        'tool.result',
        '{"call":1,"key":"go.agent.0.1","error":"interrupted","interrupted":true,"partial":[{"step":1}]}',
      ],
      [it0, 'pause', '{"name":"cool-off","duration_ms":1500}'],
      [
        it0,
        'commit',
        '{"action":"continue","output":{"done":false},"state":"AAEC+v8=","wait":{"for":"input"}}',
      ],
      [it1, 'claim', goClaim(it1)],
      [it1, 'commit', '{"action":"fail","error":"boom","failure_type":"retriable","retry_after_ms":250}'],
    ];
    let tail = 0;
    const nextIndex = new Map<Task, number>();
    for (const [t, type, json] of records) {
      const index = nextIndex.get(t) ?? 0;
      nextIndex.set(t, index + 1);
      tail = await put(js, t, type, json, index, tail);
    }

    const read0 = await read(js, 'go', 'agent');
    expect(read0.map((r) => r.type)).toEqual(records.map(([, type]) => type));
    read0.forEach((r, i) => {
      const json = records[i]![2];
      if (r.type === 'opaque') throw new Error(`seq ${r.seq} decoded as opaque`);
      // The same bytes, field for field: what a TypeScript writer stores for this body is Go's.
      expect(text(encodeBody(r.type, r.data))).toBe(json);
      expect(toWireRecord(r).data).toEqual(JSON.parse(json));
    });
    const commit = read0[8]!;
    expect(commit.type === 'commit' && commit.data.state).toEqual(new Uint8Array([0, 1, 2, 250, 255]));
    const intent = read0[4]!;
    expect(intent.type === 'tool.intent' && intent.data.replay).toBe('unsafe');
    const report = await check(nc, 'go');
    expect(report.steps).toEqual([{ stepId: 'agent', records: records.length, commits: 2, violations: [] }]);
  });

  const wrong: [type: string, json: string, detail: string | null][] = [
    [
      'claim',
      '{"iteration":"0","attempt":1,"delivered":1}',
      'needs "iteration" to be a whole number (found "0")',
    ],
    ['entry', '{"note": oops', null],
    ['model.response', '{"output":"hi"}', 'needs "call" to be a whole number (found none)'],
    [
      'tool.intent',
      '{"name":"deploy","call":0,"key":"k","replay":"maybe"}',
      'needs "replay" to be "safe" or "unsafe" (found "maybe")',
    ],
    ['tool.result', '{"call":0,"key":7}', 'needs "key" to be a string (found 7)'],
    ['pause', '{"name":"p","duration_ms":1.5}', 'needs "duration_ms" to be a whole number (found 1.5)'],
    ['input.placed', '["r1"]', 'needs to be a JSON object (found ["r1"])'],
    ['commit', '{"action":"done"}', 'needs "action" to be "continue", "complete" or "fail" (found "done")'],
    [
      'commit',
      '{"action":"fail","state":"not base64!"}',
      'needs "state" to be base64 text (found "not base64!")',
    ],
  ];

  it.each(wrong.map(([type, json, detail], i) => ({ type, json, detail, run: `bad${i}` })))(
    'a $type body of the wrong shape ($json) is a CorruptRecordError naming the record, and check() reports it',
    async ({ type, json, detail, run }) => {
      const { nc, js } = await connect();
      const t = task(run, 'agent');
      const claim = await put(js, t, 'claim', goClaim(t), 0, 0);
      const bad = await put(js, t, type, json, 1, claim);
      const subject = journalSubject(run, 'agent');

      const failure = await read(js, run, 'agent').catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(CorruptRecordError);
      expect(failure).toMatchObject({ seq: bad, subject });
      expect((failure as Error).message).toBe(
        `journal: record ${bad} on ${subject} is corrupt: ${detail === null ? 'its body is not JSON' : `its ${type} body ${detail}`}`,
      );
      // Opening the step meets the same record: a holder never replays a body it cannot trust.
      await expect(Journal.open(js, task(run, 'agent', { delivered: 2 }))).rejects.toThrow(
        CorruptRecordError,
      );

      const report = await check(nc, run);
      expect(report.steps).toEqual([
        {
          stepId: 'agent',
          records: 2,
          commits: 0,
          violations: [
            `corrupt: seq ${bad} ${detail === null ? 'has a body that is not JSON' : `has a ${type} body that ${detail}`}`,
          ],
        },
      ]);
    },
  );

  it('a record of a type this reader does not know stays readable: opaque, under its stored type, and no finding', async () => {
    const { nc, js } = await connect();
    const t = task('newer', 'agent');
    const claim = await put(js, t, 'claim', goClaim(t), 0, 0);
    const other = await put(js, t, 'checkpoint', '{"at":3,"note":"a newer writer’s record"}', 1, claim);

    const [, record] = await read(js, 'newer', 'agent');
    expect(record).toMatchObject({
      seq: other,
      type: 'opaque',
      storedType: 'checkpoint',
      data: { at: 3, note: 'a newer writer’s record' },
    });
    expect(toWireRecord(record!)).toMatchObject({ type: 'checkpoint', data: { at: 3 } });
    expect((await check(nc, 'newer')).steps[0]!.violations).toEqual([]);
    // A later delivery opens past it and commits after it.
    const next = await Journal.open(js, task('newer', 'agent', { delivered: 2 }));
    expect(next.records().map((r: JournalRecord) => r.type)).toEqual(['claim', 'opaque']);
    await next.commit({ action: 'complete' });
    expect((await check(nc, 'newer')).ok()).toBe(true);
  });

  it('a record stored without a type header is an entry, whether it has other headers or none', async () => {
    const { js } = await connect();
    const t = task('untyped', 'agent');
    const subject = journalSubject('untyped', 'agent');
    const claim = await put(js, t, 'claim', goClaim(t), 0, 0);
    const h = recordHeaders('entry', t, 1);
    h.delete(HEADER.type);
    await js.publish(subject, new TextEncoder().encode('{"with":"headers"}'), {
      headers: h,
      expect: { lastSubjectSequence: claim },
    });
    await js.publish(subject, new TextEncoder().encode('{"with":"none"}'));

    const records = await read(js, 'untyped', 'agent');
    expect(records.map((r) => [r.type, r.data])).toEqual([
      ['claim', { iteration: 0, attempt: 1, delivered: 1, stream_seq: 10 }],
      ['entry', { with: 'headers' }],
      ['entry', { with: 'none' }],
    ]);
  });

  it('a body of the wrong shape is refused before it is encoded (TypeError), naming what is wrong', () => {
    expect(() => encodeBody('tool.result', { call: 0 } as never)).toThrow(
      new TypeError('tool.result body needs "key" to be a string (found none)'),
    );
    expect(() => encodeBody('commit', { action: 'complete', state: 'AAE=' } as never)).toThrow(
      new TypeError('commit body needs "state" to be bytes (a Uint8Array) (found "AAE=")'),
    );
    expect(() => encodeBody('claim', { iteration: 0, attempt: 1, delivered: 1.5 })).toThrow(TypeError);
    expect(text(encodeBody('entry', [1, 'two']))).toBe('[1,"two"]');
  });
});
