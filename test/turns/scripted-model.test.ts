import { describe, expect, it } from 'vitest';
import { ModelError, type ModelRequest, type ModelResponse } from '../../src/turns/model.js';
import { parseScript, ScriptError, ScriptedModel } from '../../src/turns/scripted-model.js';

const request: ModelRequest = {
  model: 'claude-test',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
  tools: [],
  max_tokens: 1024,
};

const script: ModelResponse[] = [
  {
    content: [{ type: 'tool_use', id: 'toolu_1', name: 'bash', input: { command: 'ls' } }],
    stop_reason: 'tool_use',
    usage: { input_tokens: 10, output_tokens: 5 },
  },
  { content: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn', usage: {} },
];

describe('ScriptedModel', () => {
  it('answers call n with response n, whatever order or process the calls come from', async () => {
    const first = new ScriptedModel(script);
    expect(await first.create(request, { sessionId: 's', callIndex: 0 })).toEqual(script[0]);
    // A restarted brain (a fresh instance) asked for call 1 continues the script.
    const restarted = new ScriptedModel(script);
    expect(await restarted.create(request, { sessionId: 's', callIndex: 1 })).toEqual(script[1]);
    expect(await restarted.create(request, { sessionId: 's', callIndex: 0 })).toEqual(script[0]);
  });

  it('past the end of the script → ModelError script_exhausted', async () => {
    const model = new ScriptedModel(script);
    const call = model.create(request, { sessionId: 'sesn_1', callIndex: 2 });
    await expect(call).rejects.toBeInstanceOf(ModelError);
    await expect(call).rejects.toMatchObject({ kind: 'script_exhausted', status: null });
    await expect(call).rejects.toThrow(/sesn_1/);
  });

  it('refuses a call index that is not a count, and an aborted call', async () => {
    const model = new ScriptedModel(script);
    await expect(model.create(request, { sessionId: 's', callIndex: -1 })).rejects.toThrow(TypeError);
    await expect(model.create(request, { sessionId: 's', callIndex: 0.5 })).rejects.toThrow(TypeError);
    const aborted = AbortSignal.abort(new Error('lease lost'));
    await expect(model.create(request, { sessionId: 's', callIndex: 0, signal: aborted })).rejects.toThrow(
      'lease lost',
    );
  });

  it('a served response is a copy: mutating it (or the array given) does not change the script', async () => {
    const given = structuredClone(script);
    const model = new ScriptedModel(given);
    const served = await model.create(request, { sessionId: 's', callIndex: 1 });
    (served.content[0] as { text: string }).text = 'mutated';
    given[1]!.stop_reason = 'mutated';
    expect(await model.create(request, { sessionId: 's', callIndex: 1 })).toEqual(script[1]);
  });

  it('records each call it was asked, so a test can assert what the brain sent', async () => {
    const model = new ScriptedModel(script);
    await model.create(request, { sessionId: 's', callIndex: 0 });
    await model.create(request, { sessionId: 's', callIndex: 5 }).catch(() => {});
    expect(model.calls().map((c) => c.context.callIndex)).toEqual([0, 5]);
    expect(model.calls()[0]!.request).toBe(request);
  });
});

describe('parseScript', () => {
  it('parses a file of Messages responses; usage defaults to {}, id and model are kept', () => {
    const parsed = parseScript(
      JSON.stringify([
        { id: 'msg_1', model: 'claude-x', content: [{ type: 'text', text: 'a' }], stop_reason: 'end_turn' },
        {
          content: [
            { type: 'thinking', thinking: 'hmm', signature: 'sig' },
            { type: 'redacted_thinking', data: 'xyz' },
            { type: 'tool_use', id: 'toolu_1', name: 'read', input: { file_path: 'a' } },
          ],
          stop_reason: null,
          usage: { output_tokens: 3 },
        },
      ]),
    );
    expect(parsed).toEqual([
      {
        id: 'msg_1',
        model: 'claude-x',
        content: [{ type: 'text', text: 'a' }],
        stop_reason: 'end_turn',
        usage: {},
      },
      {
        content: [
          { type: 'thinking', thinking: 'hmm', signature: 'sig' },
          { type: 'redacted_thinking', data: 'xyz' },
          { type: 'tool_use', id: 'toolu_1', name: 'read', input: { file_path: 'a' } },
        ],
        stop_reason: null,
        usage: { output_tokens: 3 },
      },
    ]);
  });

  const ok = { content: [{ type: 'text', text: 'fine' }], stop_reason: 'end_turn' };
  const bad: Array<[string, string, RegExp]> = [
    ['not JSON', '[{', /not JSON/],
    ['not an array', JSON.stringify(ok), /JSON array/],
    ['an entry that is not an object', JSON.stringify([ok, 'hello']), /script\[1\]: must be an object/],
    [
      'no content array',
      JSON.stringify([ok, ok, { stop_reason: 'end_turn' }]),
      /script\[2\]: needs a "content" array/,
    ],
    ['no stop_reason', JSON.stringify([{ content: [] }]), /script\[0\]: needs a "stop_reason"/],
    [
      'a numeric stop_reason',
      JSON.stringify([{ content: [], stop_reason: 1 }]),
      /script\[0\]: needs a "stop_reason"/,
    ],
    ['usage not an object', JSON.stringify([{ ...ok, usage: 3 }]), /script\[0\]: "usage" must be an object/],
    [
      'an unknown block type',
      JSON.stringify([ok, { content: [{ type: 'image' }], stop_reason: 'end_turn' }]),
      /script\[1\]\.content\[0\]: type must be one of/,
    ],
    [
      'a tool_use without an id',
      JSON.stringify([{ content: [{ type: 'tool_use', name: 'bash', input: {} }], stop_reason: 'tool_use' }]),
      /script\[0\]\.content\[0\]: a tool_use block needs a string "id"/,
    ],
    [
      'a tool_use whose input is not an object',
      JSON.stringify([
        { content: [{ type: 'tool_use', id: 't', name: 'bash', input: 'ls' }], stop_reason: null },
      ]),
      /script\[0\]\.content\[0\]: a tool_use block needs an object "input"/,
    ],
    [
      'a thinking block without its signature',
      JSON.stringify([{ content: [{ type: 'thinking', thinking: 'x' }], stop_reason: 'end_turn' }]),
      /script\[0\]\.content\[0\]: a thinking block needs a string "signature"/,
    ],
  ];
  it.each(bad)('refuses %s with a ScriptError naming where', (_, text, message) => {
    expect(() => parseScript(text)).toThrow(ScriptError);
    expect(() => parseScript(text)).toThrow(message);
  });
});
