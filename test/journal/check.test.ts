import { JetStreamApiError, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { beforeAll, describe, expect, it } from 'vitest';
import { toBase64 } from '../../src/base64.js';
import { check, SKIPPED_INVARIANT_3 } from '../../src/journal/check.js';
import { recordHeaders } from '../../src/journal/codec.js';
import { CorruptRecordError } from '../../src/journal/errors.js';
import { read } from '../../src/journal/read.js';
import { ensureJournalStream } from '../../src/journal/stream.js';
import { type Commit, journalSubject } from '../../src/journal/types.js';
import { useNatsServer } from '../helpers/nats.js';
import { rawJournal, task } from '../helpers/raw-journal.js';

describe('journal read and check', () => {
  const nats = useNatsServer();

  beforeAll(async () => {
    await ensureJournalStream(await jetstreamManager(await nats.connect()));
  });

  async function setup(runId: string, stepId = 'agent') {
    const nc = await nats.connect();
    const js = jetstream(nc);
    return { nc, js, journal: rawJournal(js, runId, stepId), t: task.bind(null, runId, stepId) };
  }

  async function violations(runId: string, options?: Parameters<typeof check>[2]) {
    const { nc } = await setup(runId);
    return (await check(nc, runId, options)).steps.flatMap((s) => s.violations);
  }

  it('56: read() returns records seq-ascending with decoded headers and bodies; state round-trips as base64', async () => {
    const { js, journal, t } = await setup('s56');
    const it0 = t({ dispatchNonce: 'n0' });
    const state = new Uint8Array([0, 1, 2, 250, 255]);
    const seqs = [
      await journal.claim(it0),
      await journal.write('entry', it0, { note: 'hi' }),
      await journal.commit(it0, { action: 'continue', output: { ok: true }, state }),
    ];
    const records = await read(js, 's56', 'agent');

    expect(records.map((r) => r.seq)).toEqual(seqs);
    expect(records.map((r) => [r.type, r.index, r.expectedSeq])).toEqual([
      ['claim', 0, 0],
      ['entry', 1, seqs[0]],
      ['commit', 2, seqs[1]],
    ]);
    expect(records[1]!.task).toEqual({ ...it0, runId: 's56', stepId: 'agent' });
    expect(records[1]!.msgId).toBe('s56.agent.1.0.10.1.1');
    expect(records[1]!.data).toEqual({ note: 'hi' });
    expect(records[0]!.data).toEqual({
      iteration: 0,
      attempt: 1,
      delivered: 1,
      dispatch_nonce: 'n0',
      stream_seq: 10,
    });
    const commit = records[2]!.data as Commit;
    expect(commit.state).toEqual(state);
    expect(commit).toMatchObject({ action: 'continue', output: { ok: true } });
    // On the wire the bytes are a base64 string, as Go's encoding/json writes a []byte.
    const jsm = await js.jetstreamManager();
    const stored = await jsm.streams.getMessage('AGENT_JOURNAL', { seq: seqs[2]! });
    expect(JSON.parse(new TextDecoder().decode(stored!.data)).state).toBe(toBase64(state));
    expect(toBase64(state)).toBe('AAEC+v8=');
  });

  it('57: read() of a 2000-record journal interleaved with another subject returns exactly its 2000 records in order', async () => {
    const { js, journal, t } = await setup('s57');
    const other = rawJournal(js, 's57', 'other');
    const it0 = t();
    const written = [await journal.claim(it0)];
    await other.claim(it0);
    for (let i = 1; i < 2000; i++) {
      written.push(await journal.write('entry', it0, { i }));
      await other.write('entry', it0, { i });
    }
    const started = performance.now();
    const records = await read(js, 's57', 'agent');
    const elapsed = performance.now() - started;
    console.warn(`read() of 2000 records took ${elapsed.toFixed(1)} ms`);

    expect(records).toHaveLength(2000);
    expect(records.map((r) => r.seq)).toEqual(written);
    expect(records.every((r) => r.task.stepId === 'agent')).toBe(true);
    expect(records.slice(1).map((r) => (r.data as { i: number }).i)).toEqual(
      Array.from({ length: 1999 }, (_, i) => i + 1),
    );
  });

  it('58: two commits from the accepted attempt in one iteration violate invariant 1, naming both seqs', async () => {
    const { journal, t } = await setup('s58');
    const it0 = t();
    await journal.claim(it0);
    const first = await journal.commit(it0, { action: 'continue' });
    const second = await journal.commit(it0, { action: 'continue' });
    await journal.claim(t({ iteration: 1 }));

    expect(await violations('s58')).toContain(
      `invariant 1: iteration 0 has 2 commits from accepted attempt 1 (claim at seq ${first - 1}), at seq ${first}, ${second}`,
    );
  });

  it('58: an iteration that a later one follows without a commit from its accepted attempt violates invariant 1', async () => {
    const { journal, t } = await setup('s58b');
    await journal.claim(t());
    await journal.commit(t(), { action: 'fail', failure_type: 'retriable' });
    // Attempt 2 is accepted, never commits, yet iteration 1 runs.
    const retry = await journal.claim(t({ attempt: 2, streamSeq: 11 }));
    await journal.claim(t({ iteration: 1, attempt: 2, streamSeq: 12 }));

    expect((await violations('s58b')).filter((v) => v.startsWith('invariant 1'))).toEqual([
      `invariant 1: iteration 0 has no commit from accepted attempt 2 (claim at seq ${retry}), yet a later iteration exists`,
    ]);
  });

  it('59: a raw unfenced record of an older claim after the newer claim violates invariant 2', async () => {
    const { journal, t } = await setup('s59');
    const d1 = t({ delivered: 1 });
    const d2 = t({ delivered: 2 });
    await journal.claim(d1);
    await journal.write('entry', d1, 'before the fence');
    const fence = await journal.claim(d2);
    const stale = await journal.write('entry', d1, 'after the fence', { unfenced: true });

    const found = await violations('s59');
    expect(found.filter((v) => v.startsWith('invariant 2'))).toEqual([
      `invariant 2: seq ${stale} (entry, iteration 0, attempt 1 delivered 1 stream_seq 10) follows the newer claim at seq ${fence} that fenced it`,
    ]);
  });

  it('59: a resend’s claim (higher stream_seq, delivered 1) fences a later delivery of the original message', async () => {
    const { journal, t } = await setup('s59c');
    const original = t({ streamSeq: 10, delivered: 3 });
    await journal.claim(original);
    const resend = await journal.claim(t({ streamSeq: 11, delivered: 1 }));
    const stale = await journal.write('entry', original, 'stale', { unfenced: true });

    expect((await violations('s59c')).filter((v) => v.startsWith('invariant 2'))).toEqual([
      `invariant 2: seq ${stale} (entry, iteration 0, attempt 1 delivered 3 stream_seq 10) follows the newer claim at seq ${resend} that fenced it`,
    ]);
  });

  it('59: an older claim landing after a newer claim, or a record of an earlier iteration after a later claim, violates invariant 2', async () => {
    const { journal, t } = await setup('s59b');
    await journal.claim(t({ attempt: 2, streamSeq: 11 }));
    const older = await journal.claim(t({ attempt: 1, streamSeq: 10 }), { unfenced: true });
    await journal.commit(t({ attempt: 2, streamSeq: 11 }), { action: 'continue' });
    const next = await journal.claim(t({ iteration: 1, attempt: 2, streamSeq: 12 }));
    const late = await journal.write('entry', t({ attempt: 2, streamSeq: 11 }), 'late');

    const found = (await violations('s59b')).filter((v) => v.startsWith('invariant 2'));
    expect(found).toHaveLength(2);
    expect(found[0]).toMatch(
      new RegExp(`^invariant 2: seq ${older} \\(claim.*follows the newer claim at seq`),
    );
    expect(found[1]).toMatch(
      new RegExp(`^invariant 2: seq ${late} .*follows the claim of iteration 1 at seq ${next}$`),
    );
  });

  it('60: a tool.intent without a tool.result in the accepted attempt violates invariant 4; a superseded attempt’s does not', async () => {
    const { journal, t } = await setup('s60');
    const a1 = t();
    const a2 = t({ attempt: 2, streamSeq: 11 });
    const intent = {
      name: 'send',
      input: { to: 'x' },
      call: 0,
      key: 's60.agent.0.0',
      replay: 'unsafe',
    } as const;
    await journal.claim(a1);
    await journal.write('tool.intent', a1, intent); // superseded: attempt 2 honours it
    await journal.claim(a2);
    await journal.write('tool.intent', a2, intent);
    await journal.write('tool.result', a2, { call: 0, key: intent.key, output: 'sent' });
    const open = await journal.write('tool.intent', a2, { ...intent, call: 1, key: 's60.agent.0.1' });
    await journal.commit(a2, { action: 'complete' });

    expect(await violations('s60')).toEqual([
      `invariant 4: tool.intent at seq ${open} (call 1 key s60.agent.0.1) has no tool.result in accepted attempt 2`,
    ]);
  });

  it('60: iterations that disagree with the accepted continue commits violate invariant 6, from the journal or the engine’s count', async () => {
    const { journal, t } = await setup('s60b');
    await journal.claim(t());
    await journal.commit(t(), { action: 'complete' });
    await journal.claim(t({ iteration: 1, streamSeq: 11 }));

    expect(await violations('s60b')).toEqual([
      'invariant 6: iterations [0, 1] exist but 0 accepted continue commits allow iterations 0..0',
    ]);
    // The engine's count is compared as well, never instead of the journal's own agreement.
    expect(await violations('s60b', { engineIterations: { agent: 1 } })).toHaveLength(1);
    expect(await violations('s60b', { engineIterations: { agent: 3 } })).toEqual([
      'invariant 6: iterations [0, 1] exist but 0 accepted continue commits allow iterations 0..0',
      'invariant 6: the engine counts 3 iterations but the journal has 0 accepted continue commits (expected 1)',
    ]);
  });

  it('60: invariant 3 is reported as skipped, with its reason', async () => {
    const { nc, journal, t } = await setup('s60c');
    await journal.claim(t());
    const report = await check(nc, 's60c');
    expect(report.skipped).toEqual([SKIPPED_INVARIANT_3]);
    expect(report.skipped[0]).toMatch(/^invariant 3 .*side-effect counter/);
  });

  it('55: a request_id placed twice violates invariant 5', async () => {
    const { journal, t } = await setup('s55');
    await journal.claim(t());
    const first = await journal.write('input.placed', t(), { request_id: 'r1', mode: 'queue' });
    await journal.commit(t(), { action: 'continue' });
    await journal.claim(t({ iteration: 1, streamSeq: 11 }));
    const again = await journal.write('input.placed', t({ iteration: 1, streamSeq: 11 }), {
      request_id: 'r1',
      mode: 'queue',
    });

    expect(await violations('s55')).toEqual([
      `invariant 5: request_id r1 is placed 2 times, at seq ${first}, ${again}`,
    ]);
  });

  it('61: the chain check flags a record stored without the fence and passes every fenced one', async () => {
    const { journal, t } = await setup('s61');
    await journal.claim(t());
    await journal.write('entry', t(), 1);
    const loose = await journal.write('entry', t(), 2, { unfenced: true });
    await journal.write('entry', t(), 3);

    expect(await violations('s61')).toEqual([
      `chain: seq ${loose} was stored without an expected last subject sequence (unfenced write)`,
    ]);
  });

  it('62: deny_delete refuses deleteMessage with 10057; a subject purge makes expected 0 acceptable again', async () => {
    const { nc, js, journal, t } = await setup('s62');
    const seq = await journal.claim(t());
    const jsm = await jetstreamManager(nc);
    const refused = await jsm.streams.deleteMessage('AGENT_JOURNAL', seq).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(JetStreamApiError);
    expect((refused as JetStreamApiError).code).toBe(10057);

    const subject = journalSubject('s62', 'agent');
    const stale = await js
      .publish(subject, '{}', { expect: { lastSubjectSequence: 0 } })
      .catch((e: unknown) => e);
    expect((stale as JetStreamApiError).code).toBe(10071);
    // The purge erases the fence with the history: GC may only purge runs that are terminal.
    await jsm.streams.purge('AGENT_JOURNAL', { filter: subject });
    const accepted = await js.publish(subject, '{}', { expect: { lastSubjectSequence: 0 } });
    expect(accepted.seq).toBeGreaterThan(seq);
  });

  it('a clean run (retry, fenced redelivery, tools, inputs, an iteration in progress) is ok, step by step', async () => {
    const { nc, js, journal, t } = await setup('clean');
    const d1 = t();
    const d2 = t({ delivered: 2 });
    await journal.claim(d1);
    await journal.write('entry', d1, 'stalled');
    await journal.claim(d2);
    await journal.write('input.placed', d2, { request_id: 'r1', mode: 'queue', content: 'hello' });
    await journal.write('tool.intent', d2, { name: 'read', call: 0, key: 'clean.agent.0.0', replay: 'safe' });
    await journal.write('tool.result', d2, { call: 0, key: 'clean.agent.0.0', output: 1 });
    await journal.commit(d2, { action: 'continue', state: new Uint8Array([1]) });
    const i1 = t({ iteration: 1, streamSeq: 11 });
    await journal.claim(i1);
    await journal.commit(i1, { action: 'fail', failure_type: 'retriable' });
    const i1a2 = t({ iteration: 1, attempt: 2, streamSeq: 12 });
    await journal.claim(i1a2);
    await journal.commit(i1a2, { action: 'continue' });
    await journal.claim(t({ iteration: 2, streamSeq: 13 }));
    // A second step of the run, and a run whose id shares the prefix, which must not be included.
    const review = rawJournal(js, 'clean', 'review');
    await review.claim(task('clean', 'review'));
    await rawJournal(js, 'clean2', 'agent').claim(task('clean2', 'agent'));

    const report = await check(nc, 'clean');
    expect(report.steps).toEqual([
      { stepId: 'agent', records: 12, commits: 3, violations: [] },
      { stepId: 'review', records: 1, commits: 0, violations: [] },
    ]);
    expect(report.ok()).toBe(true);
    expect(report.runId).toBe('clean');
    expect((await check(nc, 'clean', { engineIterations: { agent: 3 } })).ok()).toBe(true);
    expect((await check(nc, 'clean', { engineIterations: { agent: 2 } })).ok()).toBe(false);
  });

  it('a run with no journal has no steps and is ok; a run id that is not one token is refused', async () => {
    const { nc } = await setup('none');
    const report = await check(nc, 'never-ran');
    expect(report.steps).toEqual([]);
    expect(report.ok()).toBe(true);
    await expect(check(nc, 'a.b')).rejects.toThrow(TypeError);
  });

  it('a record whose body is not JSON makes read() throw CorruptRecordError naming it, and check() report it', async () => {
    const { nc, js, journal, t } = await setup('corrupt');
    await journal.claim(t());
    const subject = journalSubject('corrupt', 'agent');
    // What a foreign or damaged writer could leave: the journal's headers, a body that is not JSON.
    const bad = await js.publish(subject, new TextEncoder().encode('{"note": oops'), {
      headers: recordHeaders('entry', t(), 1),
      expect: { lastSubjectSequence: journal.tail },
    });

    const failure = await read(js, 'corrupt', 'agent').catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(CorruptRecordError);
    expect(failure).toMatchObject({ seq: bad.seq, subject });
    expect((failure as Error).message).toBe(
      `journal: record ${bad.seq} on ${subject} is corrupt: its body is not JSON`,
    );

    const report = await check(nc, 'corrupt');
    expect(report.ok()).toBe(false);
    expect(report.steps).toEqual([
      {
        stepId: 'agent',
        records: 2,
        commits: 0,
        violations: [`corrupt: seq ${bad.seq} has a body that is not JSON`],
      },
    ]);
  });
});
