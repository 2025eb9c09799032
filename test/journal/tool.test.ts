import { beforeAll, describe, expect, it } from 'vitest';
import { ConcurrentUseError, FencedError, ReplayMismatchError } from '../../src/journal/errors.js';
import { Journal } from '../../src/journal/journal.js';
import { read } from '../../src/journal/read.js';
import type { ToolCall } from '../../src/journal/replay.js';
import type { ToolIntentBody } from '../../src/journal/types.js';
import {
  connectJs,
  countingTool,
  deferred,
  provisionJournal,
  rawPublish,
  recordTypes,
  STEP,
  taskOf,
  uniqueRun,
} from '../helpers/journal.js';
import { useNatsServer } from '../helpers/nats.js';

describe('Journal.tool: durable tool calls', () => {
  const nats = useNatsServer();
  beforeAll(() => provisionJournal(nats));

  async function setup() {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    return { js, run, key: (call: number, iteration = 0) => `${run}.${STEP}.${iteration}.${call}` };
  }

  /**
   * Delivery 1 starts `call` and stalls inside the tool (after `entries`); delivery 2 then
   * claims. Returns d2's handle and a function that lets d1's tool finish (it is fenced then).
   */
  async function stallInTool(
    js: Awaited<ReturnType<typeof setup>>['js'],
    run: string,
    replay: 'safe' | 'unsafe',
    entries: unknown[] = [],
    call = { name: 'send', input: { to: 'ann' } },
  ) {
    const d1 = await Journal.open(js, taskOf(run, { delivered: 1 }));
    const release = deferred();
    const started = deferred();
    const stalled = d1.tool(call, replay, async () => {
      for (const e of entries) await d1.append('entry', e as never);
      started.resolve();
      await release.promise;
      return 'd1 finished';
    });
    await started.promise;
    const d2 = await Journal.open(js, taskOf(run, { delivered: 2 }));
    return {
      d2,
      finishD1: async () => {
        release.resolve();
        await expect(stalled).rejects.toThrow(FencedError);
      },
    };
  }

  it('a fresh call writes its intent, runs once, writes its result; call 0 has key run.step.iteration.0', async () => {
    const { js, run, key } = await setup();
    const j = await Journal.open(js, taskOf(run));
    const seen: ToolCall[] = [];
    const tool = countingTool({ hits: 3 }, (c) => {
      seen.push(c);
      return { hits: 3 };
    });

    const result = await j.tool({ name: 'search', input: { q: 'nats' } }, 'safe', tool.fn);
    expect(result).toEqual({ call: 0, key: key(0), output: { hits: 3 } });
    expect(tool.runs()).toBe(1);
    expect(seen).toEqual([{ name: 'search', input: { q: 'nats' }, call: 0, key: key(0) }]);
    const records = await read(js, run, STEP);
    expect(records.slice(1).map((r) => [r.type, r.data])).toEqual([
      ['tool.intent', { name: 'search', input: { q: 'nats' }, call: 0, key: key(0), replay: 'safe' }],
      ['tool.result', { call: 0, key: key(0), output: { hits: 3 } }],
    ]);
    expect((await j.tool({ name: 'search', input: { q: 'more' } }, 'safe', tool.fn)).key).toBe(key(1));
  });

  it('a recovering claim returns the recorded result without running the tool', async () => {
    const { js, run } = await setup();
    const d1 = await Journal.open(js, taskOf(run, { delivered: 1 }));
    const first = countingTool({ sent: true });
    const recorded = await d1.tool({ name: 'send', input: { to: 'ann' } }, 'unsafe', first.fn);

    const d2 = await Journal.open(js, taskOf(run, { delivered: 2 }));
    const again = countingTool({ sent: 'again' });
    expect(await d2.tool({ name: 'send', input: { to: 'ann' } }, 'unsafe', again.fn)).toEqual(recorded);
    expect(again.runs()).toBe(0);
    expect(await recordTypes(js, run)).toEqual(['claim', 'tool.intent', 'tool.result', 'claim']);
  });

  it('an intent without result recorded and replayed safe runs again: one result, no second intent', async () => {
    const { js, run, key } = await setup();
    const { d2, finishD1 } = await stallInTool(js, run, 'safe');
    const tool = countingTool('rerun');

    const result = await d2.tool({ name: 'send', input: { to: 'ann' } }, 'safe', tool.fn);
    expect(result).toEqual({ call: 0, key: key(0), output: 'rerun' });
    expect(tool.runs()).toBe(1);
    await finishD1();
    expect(await recordTypes(js, run)).toEqual(['claim', 'tool.intent', 'claim', 'tool.result']);
  });

  it('an unsafe intent without result is answered interrupted with its key; the tool does not run', async () => {
    const { js, run, key } = await setup();
    const { d2, finishD1 } = await stallInTool(js, run, 'unsafe');
    const tool = countingTool();

    const result = await d2.tool({ name: 'send', input: { to: 'ann' } }, 'unsafe', tool.fn);
    expect(result).toEqual({ call: 0, key: key(0), error: 'interrupted', interrupted: true, partial: [] });
    expect(tool.runs()).toBe(0);
    await finishD1();
    const records = await read(js, run, STEP);
    expect(records.map((r) => r.type)).toEqual(['claim', 'tool.intent', 'claim', 'tool.result']);
    expect(records[3]!.data).toEqual(result);
  });

  it('a rerun needs both declarations safe: safe then unsafe, and unsafe then safe, are interrupted', async () => {
    for (const [recorded, current] of [
      ['safe', 'unsafe'],
      ['unsafe', 'safe'],
    ] as const) {
      const { js, run } = await setup();
      const { d2, finishD1 } = await stallInTool(js, run, recorded);
      const tool = countingTool();
      const result = await d2.tool({ name: 'send', input: { to: 'ann' } }, current, tool.fn);
      expect(result).toMatchObject({ interrupted: true, error: 'interrupted' });
      expect(tool.runs()).toBe(0);
      await finishD1();
    }
  });

  it("an interrupted result's partial holds the entries its holder appended after the intent, in order", async () => {
    const { js, run } = await setup();
    const d1 = await Journal.open(js, taskOf(run, { delivered: 1 }));
    await d1.append('entry', { before: 'the tool' });
    const release = deferred();
    const started = deferred();
    const stalled = d1.tool({ name: 'send' }, 'unsafe', async () => {
      await d1.append('entry', { step: 1 });
      await d1.append('entry', { step: 2 });
      started.resolve();
      await release.promise;
      return 'late';
    });
    await started.promise;
    // d2 claims, notes something and crashes before reaching the tool call.
    const d2 = await Journal.open(js, taskOf(run, { delivered: 2 }));
    await d2.append('entry', { by: 'd2' });

    const d3 = await Journal.open(js, taskOf(run, { delivered: 3 }));
    const result = await d3.tool({ name: 'send' }, 'unsafe', countingTool().fn);
    expect(result.partial).toEqual([{ step: 1 }, { step: 2 }]);
    const stored = (await read(js, run, STEP)).at(-1)!;
    expect(stored).toMatchObject({ type: 'tool.result', data: { partial: [{ step: 1 }, { step: 2 }] } });
    release.resolve();
    await expect(stalled).rejects.toThrow(FencedError);
  });

  it('a different tool name at a recorded position is a ReplayMismatchError: nothing written, nothing run', async () => {
    const { js, run } = await setup();
    const d1 = await Journal.open(js, taskOf(run, { delivered: 1 }));
    await d1.tool({ name: 'search', input: 1 }, 'safe', countingTool().fn);
    const d2 = await Journal.open(js, taskOf(run, { delivered: 2 }));
    const tool = countingTool();

    await expect(d2.tool({ name: 'delete', input: 1 }, 'safe', tool.fn)).rejects.toThrow(ReplayMismatchError);
    expect(tool.runs()).toBe(0);
    expect(await recordTypes(js, run)).toEqual(['claim', 'tool.intent', 'tool.result', 'claim']);
  });

  it('inputs compare as canonical JSON: other bytes of the same value match, another value does not', async () => {
    const { js, run, key } = await setup();
    const d1t = taskOf(run, { delivered: 1 });
    const d1 = await Journal.open(js, d1t);
    // A writer (Go, say) that spaced and ordered the input its own way.
    const bytes = `{"name":"search","input":{ "b" : [1, 2.0], "a":{"y":1,"x":2} },"call":0,"key":"${key(0)}","replay":"safe"}`;
    await rawPublish(js, d1t, 'tool.intent', new TextEncoder().encode(bytes), 1, d1.seq());
    const d2 = await Journal.open(js, taskOf(run, { delivered: 2 }));
    const tool = countingTool('ok');

    await expect(
      d2.tool({ name: 'search', input: { a: { x: 2, y: 1 }, b: [1, 3] } }, 'safe', tool.fn),
    ).rejects.toThrow(ReplayMismatchError);
    const result = await d2.tool(
      { name: 'search', input: { a: { x: 2, y: 1 }, b: [1, 2] } },
      'safe',
      tool.fn,
    );
    expect(result).toEqual({ call: 0, key: key(0), output: 'ok' });
    expect(tool.runs()).toBe(1);
  });

  it("a new attempt answers an earlier unsafe call's recorded result under its earlier key", async () => {
    const { js, run, key } = await setup();
    const a1 = await Journal.open(js, taskOf(run));
    await a1.tool({ name: 'read' }, 'safe', countingTool('page').fn);
    await a1.tool({ name: 'send', input: { to: 'ann' } }, 'unsafe', countingTool({ id: 'm1' }).fn);
    await a1.commit({ action: 'fail', error: 'model refused' });

    const a2 = await Journal.open(js, taskOf(run, { attempt: 2, streamSeq: 20 }));
    const tool = countingTool({ id: 'm2' });
    const result = await a2.tool({ name: 'send', input: { to: 'ann' } }, 'unsafe', tool.fn);
    expect(result).toEqual({ call: 0, key: key(1), output: { id: 'm1' } });
    expect(tool.runs()).toBe(0);
    // Recorded at this attempt's position, so a recovering claim replays it by position.
    const records = await read(js, run, STEP);
    expect(records.slice(-2).map((r) => [r.type, r.task.attempt, r.data])).toEqual([
      ['tool.intent', 2, { name: 'send', input: { to: 'ann' }, call: 0, key: key(1), replay: 'unsafe' }],
      ['tool.result', 2, { call: 0, key: key(1), output: { id: 'm1' } }],
    ]);
  });

  it('a new attempt answers an earlier unsafe intent without result as interrupted, with its partial', async () => {
    const { js, run, key } = await setup();
    const a1 = await Journal.open(js, taskOf(run));
    await a1.tool({ name: 'read' }, 'safe', countingTool('page').fn);
    const release = deferred();
    const started = deferred();
    const stalled = a1.tool({ name: 'send', input: { to: 'bo' } }, 'unsafe', async () => {
      await a1.append('entry', { sending: 'bo' });
      started.resolve();
      await release.promise;
      return 'late';
    });
    await started.promise;
    // The step-timeout watchdog dispatches attempt 2; attempt 1 never committed.
    const a2 = await Journal.open(js, taskOf(run, { attempt: 2, streamSeq: 20 }));
    expect(a2.mode()).toBe('new-attempt');

    const tool = countingTool();
    const result = await a2.tool({ name: 'send', input: { to: 'bo' } }, 'unsafe', tool.fn);
    expect(result).toEqual({
      call: 0,
      key: key(1),
      error: 'interrupted',
      interrupted: true,
      partial: [{ sending: 'bo' }],
    });
    expect(tool.runs()).toBe(0);
    release.resolve();
    await expect(stalled).rejects.toThrow(FencedError);
  });

  it('a new attempt honours two identical earlier unsafe calls once each, and runs a third', async () => {
    const { js, run, key } = await setup();
    const a1 = await Journal.open(js, taskOf(run));
    const call = { name: 'charge', input: { cents: 100 } };
    await a1.tool(call, 'unsafe', countingTool('first').fn);
    await a1.tool(call, 'unsafe', countingTool('second').fn);
    await a1.commit({ action: 'fail' });

    const a2 = await Journal.open(js, taskOf(run, { attempt: 2, streamSeq: 20 }));
    const tool = countingTool('third');
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await a2.tool(call, 'unsafe', tool.fn));
    expect(results.map((r) => [r.key, r.output])).toEqual([
      [key(0), 'first'],
      [key(1), 'second'],
      [key(2), 'third'],
    ]);
    expect(tool.runs()).toBe(1);
  });

  it('a new attempt runs an earlier safe call afresh', async () => {
    const { js, run, key } = await setup();
    const a1 = await Journal.open(js, taskOf(run));
    await a1.tool({ name: 'read', input: 'a' }, 'safe', countingTool('old').fn);
    await a1.commit({ action: 'fail' });

    const a2 = await Journal.open(js, taskOf(run, { attempt: 2, streamSeq: 20 }));
    const tool = countingTool('new');
    expect(await a2.tool({ name: 'read', input: 'a' }, 'safe', tool.fn)).toEqual({
      call: 0,
      key: key(0),
      output: 'new',
    });
    expect(tool.runs()).toBe(1);
  });

  it("a tool's own failure is recorded in result.error, not thrown, and the iteration still commits", async () => {
    const { js, run, key } = await setup();
    const j = await Journal.open(js, taskOf(run));
    const result = await j.tool({ name: 'fetch' }, 'safe', async () => {
      throw new Error('503 from upstream');
    });
    expect(result).toEqual({ call: 0, key: key(0), error: '503 from upstream' });
    await j.commit({ action: 'continue' });
    expect(await recordTypes(js, run)).toEqual(['claim', 'tool.intent', 'tool.result', 'commit']);
  });

  it('tool() on a fenced handle throws FencedError without running the tool', async () => {
    const { js, run } = await setup();
    const d1 = await Journal.open(js, taskOf(run, { delivered: 1 }));
    await Journal.open(js, taskOf(run, { delivered: 2 }));
    const tool = countingTool();

    // The intent's write finds the newer claim: fenced before the tool could start.
    await expect(d1.tool({ name: 'send' }, 'unsafe', tool.fn)).rejects.toThrow(FencedError);
    await expect(d1.tool({ name: 'send' }, 'unsafe', tool.fn)).rejects.toThrow(FencedError);
    expect(tool.runs()).toBe(0);
    expect(await recordTypes(js, run)).toEqual(['claim', 'claim']);
  });

  it('a fenced handle does not rerun a safe call either, though a rerun writes no intent first', async () => {
    const { js, run } = await setup();
    const { d2, finishD1 } = await stallInTool(js, run, 'safe');
    await Journal.open(js, taskOf(run, { delivered: 3 }));
    await expect(d2.append('entry', { noticed: false })).rejects.toThrow(FencedError);
    const tool = countingTool();

    await expect(d2.tool({ name: 'send', input: { to: 'ann' } }, 'safe', tool.fn)).rejects.toThrow(
      FencedError,
    );
    expect(tool.runs()).toBe(0);
    await finishD1();
  });

  it('a second call while a tool runs is ConcurrentUseError; the tool itself may append entries', async () => {
    const { js, run } = await setup();
    const j = await Journal.open(js, taskOf(run));
    const release = deferred();
    const started = deferred();
    const first = j.tool({ name: 'slow' }, 'safe', async () => {
      await j.append('entry', { progress: 50 });
      // One entry at a time, even from inside the tool.
      const twin = j.append('entry', { progress: 60 });
      await expect(j.append('entry', { progress: 61 })).rejects.toThrow(ConcurrentUseError);
      await twin;
      started.resolve();
      await release.promise;
      return 'done';
    });
    await started.promise;

    await expect(j.tool({ name: 'other' }, 'safe', countingTool().fn)).rejects.toThrow(ConcurrentUseError);
    await expect(j.model(async () => 'x')).rejects.toThrow(ConcurrentUseError);
    await expect(j.commit({ action: 'complete' })).rejects.toThrow(ConcurrentUseError);
    release.resolve();
    expect(await first).toMatchObject({ output: 'done' });
    expect(await recordTypes(js, run)).toEqual(['claim', 'tool.intent', 'entry', 'entry', 'tool.result']);
    // Free again once the call returned.
    await j.tool({ name: 'other' }, 'safe', countingTool().fn);
  });

  it('an entry is refused while a model request or another append is pending: only a tool may interleave', async () => {
    const { js, run } = await setup();
    const j = await Journal.open(js, taskOf(run));
    const release = deferred();
    const requested = deferred();
    const asking = j.model(async () => {
      requested.resolve();
      await release.promise;
      return 'answer';
    });
    await requested.promise;
    await expect(j.append('entry', { during: 'model' })).rejects.toThrow(ConcurrentUseError);
    release.resolve();
    await asking;

    const pending = j.append('entry', { first: true });
    await expect(j.append('entry', { second: true })).rejects.toThrow(ConcurrentUseError);
    await pending;
    expect(await recordTypes(js, run)).toEqual(['claim', 'model.response', 'entry']);
  });

  it('a tool output that is not a JSON value is rejected before its result is recorded', async () => {
    const { js, run } = await setup();
    const j = await Journal.open(js, taskOf(run));
    await expect(j.tool({ name: 'bad' }, 'safe', async () => new Map() as never)).rejects.toThrow(TypeError);
    await expect(j.tool({ name: 'nan' }, 'safe', async () => Number.NaN)).rejects.toThrow(TypeError);
    expect(await recordTypes(js, run)).toEqual(['claim', 'tool.intent', 'tool.intent']);
  });

  it("an earlier unsafe call is never answered with another attempt's result under the same key", async () => {
    const { js, run, key } = await setup();
    const a1 = await Journal.open(js, taskOf(run));
    const release = deferred();
    const started = deferred();
    const stalled = a1.tool({ name: 'send', input: 'A' }, 'unsafe', async () => {
      started.resolve();
      await release.promise;
      return 'A sent late';
    });
    await started.promise;
    // Attempt 2 made a different call at position 0: same key, its own result.
    const a2 = await Journal.open(js, taskOf(run, { attempt: 2, streamSeq: 20 }));
    expect((await a2.tool({ name: 'send', input: 'B' }, 'unsafe', countingTool('B sent').fn)).key).toBe(
      key(0),
    );
    await a2.commit({ action: 'fail' });

    const a3 = await Journal.open(js, taskOf(run, { attempt: 3, streamSeq: 30 }));
    const tool = countingTool();
    expect(await a3.tool({ name: 'send', input: 'A' }, 'unsafe', tool.fn)).toMatchObject({
      key: key(0),
      interrupted: true,
    });
    expect(await a3.tool({ name: 'send', input: 'B' }, 'unsafe', tool.fn)).toMatchObject({
      key: key(0),
      output: 'B sent',
    });
    expect(tool.runs()).toBe(0);
    release.resolve();
    await expect(stalled).rejects.toThrow(FencedError);
  });

  it('a recovering claim of a new attempt keeps honouring earlier unsafe calls after the replayed ones', async () => {
    const { js, run, key } = await setup();
    const a1 = await Journal.open(js, taskOf(run));
    await a1.tool({ name: 'send', input: 'x' }, 'unsafe', countingTool('x1').fn);
    await a1.tool({ name: 'send', input: 'y' }, 'unsafe', countingTool('y1').fn);
    await a1.commit({ action: 'fail' });
    const a2d1 = await Journal.open(js, taskOf(run, { attempt: 2, streamSeq: 20 }));
    await a2d1.tool({ name: 'send', input: 'x' }, 'unsafe', countingTool().fn);

    // Attempt 2's holder crashed; its redelivery replays call 0 and still honours call 1.
    const a2d2 = await Journal.open(js, taskOf(run, { attempt: 2, streamSeq: 20, delivered: 2 }));
    expect(a2d2.mode()).toBe('recovering');
    const tool = countingTool();
    expect((await a2d2.tool({ name: 'send', input: 'x' }, 'unsafe', tool.fn)).output).toBe('x1');
    expect(await a2d2.tool({ name: 'send', input: 'y' }, 'unsafe', tool.fn)).toEqual({
      call: 1,
      key: key(1),
      output: 'y1',
    });
    expect(tool.runs()).toBe(0);
  });

  it('an honour record left without its result is answered again from the earlier call, not as interrupted', async () => {
    const { js, run, key } = await setup();
    const a1 = await Journal.open(js, taskOf(run));
    await a1.tool({ name: 'send', input: 'x' }, 'unsafe', countingTool('x1').fn);
    await a1.commit({ action: 'fail' });
    const a2d1t = taskOf(run, { attempt: 2, streamSeq: 20 });
    const a2d1 = await Journal.open(js, a2d1t);
    // Attempt 2 wrote the honour's intent and crashed before its result.
    const honour: ToolIntentBody = { name: 'send', input: 'x', call: 0, key: key(0), replay: 'unsafe' };
    await rawPublish(js, a2d1t, 'tool.intent', honour, 1, a2d1.seq());

    const a2d2 = await Journal.open(js, taskOf(run, { attempt: 2, streamSeq: 20, delivered: 2 }));
    const tool = countingTool();
    expect(await a2d2.tool({ name: 'send', input: 'x' }, 'unsafe', tool.fn)).toEqual({
      call: 0,
      key: key(0),
      output: 'x1',
    });
    expect(tool.runs()).toBe(0);
  });
});
