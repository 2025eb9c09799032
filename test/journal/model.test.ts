import { beforeAll, describe, expect, it } from 'vitest';
import { Journal } from '../../src/journal/journal.js';
import { read } from '../../src/journal/read.js';
import { ScriptedModel } from '../../src/journal/scripted-model.js';
import { connectJs, countingTool, provisionJournal, STEP, taskOf, uniqueRun } from '../helpers/journal.js';
import { useNatsServer } from '../helpers/nats.js';

describe('Journal.model: durable model responses', () => {
  const nats = useNatsServer();
  beforeAll(() => provisionJournal(nats));

  it('a recovering claim returns the response recorded at position 0 without a request', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const model = new ScriptedModel({ text: 'plan A' }, { text: 'plan B' });
    const d1 = await Journal.open(js, taskOf(run, { delivered: 1 }));
    expect(await d1.model(model.respond)).toEqual({ text: 'plan A' });
    expect(model.requests()).toBe(1);

    const d2 = await Journal.open(js, taskOf(run, { delivered: 2 }));
    expect(await d2.model(model.respond)).toEqual({ text: 'plan A' });
    expect(model.requests()).toBe(1);
    const records = await read(js, run, STEP);
    expect(records.map((r) => [r.type, r.data])).toEqual([
      ['claim', expect.anything()],
      ['model.response', { call: 0, output: { text: 'plan A' } }],
      ['claim', expect.anything()],
    ]);
  });

  it('a failed request records nothing and the same position asks again', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const j = await Journal.open(js, taskOf(run));
    await expect(
      j.model(async () => {
        throw new Error('rate limited');
      }),
    ).rejects.toThrow('rate limited');
    expect((await read(js, run, STEP)).map((r) => r.type)).toEqual(['claim']);

    const model = new ScriptedModel('answer');
    expect(await j.model(model.respond)).toBe('answer');
    expect(model.requests()).toBe(1);
    expect((await read(js, run, STEP)).at(-1)).toMatchObject({ type: 'model.response', data: { call: 0 } });
  });

  it("a new attempt after a commit requests afresh, never reusing an earlier attempt's response", async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const model = new ScriptedModel('first try', 'second try');
    const a1 = await Journal.open(js, taskOf(run));
    await a1.model(model.respond);
    await a1.commit({ action: 'fail', error: 'bad plan' });

    const a2 = await Journal.open(js, taskOf(run, { attempt: 2, streamSeq: 20 }));
    expect(await a2.model(model.respond)).toBe('second try');
    expect(model.requests()).toBe(2);
  });

  it('interleaved model and tool calls replay in order, and the next model call goes live', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const model = new ScriptedModel('call the tool', 'summarise', 'done');
    const tool = countingTool({ rows: 2 });
    const d1 = await Journal.open(js, taskOf(run, { delivered: 1 }));
    await d1.model(model.respond);
    await d1.tool({ name: 'query' }, 'unsafe', tool.fn);
    await d1.model(model.respond);

    const d2 = await Journal.open(js, taskOf(run, { delivered: 2 }));
    expect(await d2.model(model.respond)).toBe('call the tool');
    expect((await d2.tool({ name: 'query' }, 'unsafe', tool.fn)).output).toEqual({ rows: 2 });
    expect(await d2.model(model.respond)).toBe('summarise');
    expect([model.requests(), tool.runs()]).toEqual([2, 1]);
    expect(await d2.model(model.respond)).toBe('done');
    expect(model.requests()).toBe(3);
    expect((await read(js, run, STEP)).at(-1)).toMatchObject({
      type: 'model.response',
      task: { delivered: 2 },
      data: { call: 2, output: 'done' },
    });
  });

  it('a response that is not a JSON value is refused and the position stays free', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const j = await Journal.open(js, taskOf(run));
    await expect(j.model(async () => undefined as never)).rejects.toThrow(TypeError);
    expect(await j.model(async () => 'ok')).toBe('ok');
    expect((await read(js, run, STEP)).at(-1)).toMatchObject({ data: { call: 0, output: 'ok' } });
  });
});
