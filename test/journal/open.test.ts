import { jetstreamManager } from '@nats-io/jetstream';
import { beforeAll, describe, expect, it } from 'vitest';
import { toBase64 } from '../../src/base64.js';
import {
  CommittedError,
  FencedError,
  NotProvisionedError,
  RestartLimitError,
  StaleError,
} from '../../src/journal/errors.js';
import { Journal } from '../../src/journal/journal.js';
import { read } from '../../src/journal/read.js';
import { ensureJournalStream } from '../../src/journal/stream.js';
import { type Commit, JOURNAL_STREAM, msgId, type Task } from '../../src/journal/types.js';
import {
  connectJs,
  countingTool,
  provisionJournal,
  recordCount,
  recordTypes,
  STEP,
  taskOf,
  uniqueRun,
} from '../helpers/journal.js';
import { useNatsServer } from '../helpers/nats.js';

describe('Journal.open: classify, rebuild, claim', () => {
  const nats = useNatsServer();
  beforeAll(() => provisionJournal(nats));

  it('an empty journal gets one claim at index 0 with expected 0, and nothing to rebuild', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const t = taskOf(run, { dispatchNonce: 'n1' });
    const j = await Journal.open(js, t);

    const records = await read(js, run, STEP);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      type: 'claim',
      index: 0,
      expectedSeq: 0,
      msgId: msgId(t, 0),
      data: { iteration: 0, attempt: 1, dispatch_nonce: 'n1', delivered: 1, stream_seq: 10 },
    });
    expect(j.seq()).toBe(records[0]!.seq);
    expect(j.records()).toEqual([]);
    expect(j.state()).toBeNull();
    expect(j.restarts()).toBe(0);
    expect(j.resume()).toEqual({ name: '', ok: false });
    expect(j.mode()).toBe('fresh');
  });

  it('a task for iteration N when the tail is N+1 is stale and writes nothing', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const j0 = await Journal.open(js, taskOf(run));
    await j0.commit({ action: 'continue' });
    await Journal.open(js, taskOf(run, { iteration: 1, streamSeq: 11 }));
    const before = await recordCount(js, run);

    await expect(Journal.open(js, taskOf(run, { delivered: 2 }))).rejects.toThrow(StaleError);
    expect(await recordCount(js, run)).toBe(before);
  });

  it("the tail being this attempt's commit yields committed() and no claim; every write is CommittedError", async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const first = await Journal.open(js, taskOf(run));
    const commit: Commit = { action: 'continue', output: { reply: 'hi' }, state: new Uint8Array([1, 2, 3]) };
    const commitSeq = await first.commit(commit);

    const again = await Journal.open(js, taskOf(run, { delivered: 2 }));
    expect(again.committed()).toEqual(commit);
    expect(again.committedSeq()).toBe(commitSeq);
    expect(await recordTypes(js, run)).toEqual(['claim', 'commit']);

    const tool = countingTool();
    await expect(again.append('entry', { x: 1 })).rejects.toThrow(CommittedError);
    await expect(again.tool({ name: 'search' }, 'safe', tool.fn)).rejects.toThrow(CommittedError);
    await expect(again.model(async () => 'never')).rejects.toThrow(CommittedError);
    await expect(again.commit({ action: 'complete' })).rejects.toThrow(CommittedError);
    expect(tool.runs()).toBe(0);
    expect(await recordTypes(js, run)).toEqual(['claim', 'commit']);
  });

  it('a retry after attempt 1 committed fail claims as a new attempt with restarts 0', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const a1 = await Journal.open(js, taskOf(run));
    await a1.commit({ action: 'fail', error: 'boom' });

    const a2 = await Journal.open(js, taskOf(run, { attempt: 2, streamSeq: 20 }));
    expect(await recordTypes(js, run)).toEqual(['claim', 'commit', 'claim']);
    expect(a2.restarts()).toBe(0);
    expect(a2.mode()).toBe('new-attempt');
    expect(a2.committed()).toBeNull();
  });

  it('an older delivery opening after a newer claim is fenced and writes nothing', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    await Journal.open(js, taskOf(run, { delivered: 2 }));

    await expect(Journal.open(js, taskOf(run, { delivered: 1 }))).rejects.toThrow(FencedError);
    expect(await recordCount(js, run)).toBe(1);
  });

  it('the original message opening after its resend claimed is fenced, whatever its delivery count', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    await Journal.open(js, taskOf(run, { streamSeq: 11, delivered: 1 }));

    await expect(Journal.open(js, taskOf(run, { streamSeq: 10, delivered: 1 }))).rejects.toThrow(FencedError);
    await expect(Journal.open(js, taskOf(run, { streamSeq: 10, delivered: 3 }))).rejects.toThrow(FencedError);
    expect(await recordCount(js, run)).toBe(1);
  });

  it("a newer delivery claims after an older claim, and the older holder's next append is fenced", async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const d1 = await Journal.open(js, taskOf(run, { delivered: 1 }));
    const d2 = await Journal.open(js, taskOf(run, { delivered: 2 }));
    expect(d2.mode()).toBe('recovering');

    await expect(d1.append('entry', { late: true })).rejects.toThrow(FencedError);
    expect(d1.fenced()).toBe(true);
    await d2.append('entry', { mine: true });
    expect(await recordTypes(js, run)).toEqual(['claim', 'claim', 'entry']);
  });

  it("state() of iteration 1 is iteration 0's continue state, stored as base64", async () => {
    const { js, nc } = await connectJs(nats);
    const run = uniqueRun();
    const state = new Uint8Array([0, 1, 2, 250, 255]);
    const j0 = await Journal.open(js, taskOf(run));
    const commitSeq = await j0.commit({ action: 'continue', state });

    const j1 = await Journal.open(js, taskOf(run, { iteration: 1, streamSeq: 11 }));
    expect(j1.state()).toEqual(state);
    const stored = await (await jetstreamManager(nc)).streams.getMessage(JOURNAL_STREAM, { seq: commitSeq });
    expect(stored!.json<{ state: string }>().state).toBe(toBase64(state));

    // A failed attempt of iteration 1 leaves its own state behind; the retry starts from iteration 0's.
    await j1.commit({ action: 'fail', state: new Uint8Array([9, 9]) });
    const retry = await Journal.open(js, taskOf(run, { iteration: 1, attempt: 2, streamSeq: 21 }));
    expect(retry.state()).toEqual(state);
  });

  it("records() on a recovering claim holds only this iteration's earlier records, in order", async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const j0 = await Journal.open(js, taskOf(run));
    await j0.append('entry', { it: 0 });
    await j0.commit({ action: 'continue' });
    const d1 = await Journal.open(js, taskOf(run, { iteration: 1, streamSeq: 11 }));
    const entrySeq = await d1.append('entry', { it: 1 });

    const d2 = await Journal.open(js, taskOf(run, { iteration: 1, streamSeq: 11, delivered: 2 }));
    expect(d2.mode()).toBe('recovering');
    const seen = d2.records();
    expect(seen.map((r) => [r.type, r.task.iteration, r.task.delivered])).toEqual([
      ['claim', 1, 1],
      ['entry', 1, 1],
    ]);
    expect(seen[1]!.seq).toBe(entrySeq);
    expect(seen[1]!.data).toEqual({ it: 1 });
  });

  it('a pause as the newest record before the claim is resumed; anything after it is not', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const d1 = await Journal.open(js, taskOf(run));
    await d1.pause('ci', 200);

    const d2 = await Journal.open(js, taskOf(run, { delivered: 2 }));
    expect(d2.resume()).toEqual({ name: 'ci', ok: true });
    expect(d2.restarts()).toBe(0);
    await d2.append('entry', { checked: 'ci' });

    const d3 = await Journal.open(js, taskOf(run, { delivered: 3 }));
    expect(d3.resume()).toEqual({ name: '', ok: false });
  });

  it('restarts() counts the bare claims at the tail; any other record resets it', async () => {
    const { js } = await connectJs(nats);
    const off = { restartLimit: Number.POSITIVE_INFINITY };
    const bare = uniqueRun();
    for (const delivered of [1, 2, 3]) await Journal.open(js, taskOf(bare, { delivered }), off);
    const d4 = await Journal.open(js, taskOf(bare, { delivered: 4 }), off);
    expect(d4.restarts()).toBe(3);

    // The prototype's pattern: open d1; open d2 + entry; open d3; open d4 → [0, 1, 0, 1].
    const mixed = uniqueRun();
    const seen: number[] = [];
    for (const delivered of [1, 2, 3, 4]) {
      const j = await Journal.open(js, taskOf(mixed, { delivered }), off);
      seen.push(j.restarts());
      if (delivered === 2) await j.append('entry', { progress: true });
    }
    expect(seen).toEqual([0, 1, 0, 1]);
  });

  it('at the restart limit Open claims, commits fail non_retriable, reports once and throws RestartLimitError', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    for (const delivered of [1, 2, 3]) await Journal.open(js, taskOf(run, { delivered }));
    const published: Commit[] = [];
    const onRestartLimit = (j: Journal) => {
      published.push(j.committed()!);
    };

    const failed = Journal.open(js, taskOf(run, { delivered: 4 }), { onRestartLimit });
    await expect(failed).rejects.toThrow(RestartLimitError);
    await expect(failed).rejects.toMatchObject({ restarts: 3 });
    const records = await read(js, run, STEP);
    expect(records.map((r) => r.type)).toEqual(['claim', 'claim', 'claim', 'claim', 'commit']);
    const fail = { action: 'fail', failure_type: 'non_retriable', error: 'restart limit reached (3)' };
    expect(records[4]).toMatchObject({ task: { delivered: 4 }, data: fail });
    expect(published).toEqual([fail]);

    // The next delivery finds the commit: it republishes from committed(), no second guard run.
    const next = await Journal.open(js, taskOf(run, { delivered: 5 }), { onRestartLimit });
    expect(next.committed()).toMatchObject(fail);
    expect(published).toHaveLength(1);
  });

  it('a configured restart limit trips earlier', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    await Journal.open(js, taskOf(run, { delivered: 1 }), { restartLimit: 1 });
    await expect(Journal.open(js, taskOf(run, { delivered: 2 }), { restartLimit: 1 })).rejects.toThrow(
      RestartLimitError,
    );
    expect(await recordTypes(js, run)).toEqual(['claim', 'claim', 'commit']);
  });

  it('Open and read() throw NotProvisionedError when AGENT_JOURNAL is missing', async () => {
    const { js, nc } = await connectJs(nats);
    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete(JOURNAL_STREAM);
    try {
      await expect(Journal.open(js, taskOf(uniqueRun()))).rejects.toThrow(NotProvisionedError);
      await expect(read(js, 'anyrun', STEP)).rejects.toThrow(NotProvisionedError);
    } finally {
      await ensureJournalStream(jsm);
    }
  });

  it('read() of a step that never ran is empty', async () => {
    const { js } = await connectJs(nats);
    expect(await read(js, uniqueRun(), STEP)).toEqual([]);
  });

  it('a second Open of the very same dispatch is fenced: two handles of one claim would share indexes', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    await Journal.open(js, taskOf(run));
    await expect(Journal.open(js, taskOf(run))).rejects.toThrow(FencedError);
    expect(await recordCount(js, run)).toBe(1);
  });

  /**
   * Two Opens race on one step, each on its own connection. Whatever lands first, an older
   * claim never lands after a newer one, and the older side ends fenced (at Open, or at its
   * first append).
   */
  async function race(older: Partial<Task>, newer: Partial<Task>, rounds: number) {
    const a = await connectJs(nats);
    const b = await connectJs(nats);
    const outcomes = { newerFirst: 0, olderFirst: 0 };
    for (let round = 0; round < rounds; round++) {
      const run = uniqueRun('race');
      const [o, n] = await Promise.allSettled([
        Journal.open(a.js, taskOf(run, older)),
        Journal.open(b.js, taskOf(run, newer)),
      ]);
      expect(n.status).toBe('fulfilled');
      const claims = (await read(a.js, run, STEP)).filter((r) => r.type === 'claim');
      const newerTask = taskOf(run, newer);
      const newerAt = claims.findIndex(
        (c) => c.task.delivered === newerTask.delivered && c.task.streamSeq === newerTask.streamSeq,
      );
      expect(newerAt).toBeGreaterThanOrEqual(0);
      expect(claims.slice(newerAt + 1)).toEqual([]);
      if (o.status === 'rejected') {
        expect(o.reason).toBeInstanceOf(FencedError);
        expect(claims).toHaveLength(1);
        outcomes.newerFirst += 1;
      } else {
        expect(claims).toHaveLength(2);
        await expect(o.value.append('entry', { late: true })).rejects.toThrow(FencedError);
        outcomes.olderFirst += 1;
      }
    }
    return outcomes;
  }

  it('two racing deliveries never land an older claim after a newer one, over 50 rounds', async () => {
    const outcomes = await race({ delivered: 1 }, { delivered: 2 }, 50);
    expect(outcomes.newerFirst + outcomes.olderFirst).toBe(50);
  });

  it('two racing resends are ordered by stream_seq the same way, over 50 rounds', async () => {
    const outcomes = await race({ streamSeq: 20, delivered: 1 }, { streamSeq: 21, delivered: 1 }, 50);
    expect(outcomes.newerFirst + outcomes.olderFirst).toBe(50);
  });
});
