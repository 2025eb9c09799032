import { describe, expect, it } from 'vitest';
import { buildMessages, type HistoryEvent, type HistoryViolation } from '../../src/turns/history.js';
import type { ContentBlock, ModelResponse } from '../../src/turns/model.js';
import { conversationProblems } from '../helpers/messages-checks.js';

// Small builders: events as the log holds them, responses as the brain recorded them.
const say = (id: string, ...texts: string[]): HistoryEvent => ({
  id,
  type: 'user.message',
  body: { content: texts.map((text) => ({ type: 'text', text })) },
  turn: null,
});
const agent = (
  id: string,
  type: string,
  turn: number | null,
  body: Record<string, unknown> = {},
): HistoryEvent => ({
  id,
  type,
  body,
  turn,
});
const result = (
  id: string,
  callEvent: string,
  text?: string,
  type = 'user.tool_result',
  extra: Record<string, unknown> = {},
): HistoryEvent => ({
  id,
  type,
  body: {
    [type === 'user.tool_result' ? 'tool_use_id' : 'custom_tool_use_id']: callEvent,
    ...(text === undefined ? {} : { content: [{ type: 'text', text }] }),
    ...extra,
  },
  turn: null,
});
const respond = (content: ContentBlock[], stop_reason = 'end_turn'): ModelResponse => ({
  content,
  stop_reason,
  usage: {},
});
const thinking: ContentBlock = { type: 'thinking', thinking: 'plan', signature: 'sig_abc' };
const use = (id: string, name = 'bash'): ContentBlock => ({
  type: 'tool_use',
  id,
  name,
  input: { command: 'ls' },
});
const text = (t: string): ContentBlock => ({ type: 'text', text: t });

/** Turn 0 calls bash (event ev_a ↦ toolu_a) and a custom tool (ev_b ↦ toolu_b); turn 1 answers. */
const responses = new Map([
  [0, respond([thinking, use('toolu_a'), use('toolu_b', 'lookup')], 'tool_use')],
  [1, respond([text('all done')])],
]);
const ids = new Map([
  ['ev_a', 'toolu_a'],
  ['ev_b', 'toolu_b'],
]);
const toolTurn: HistoryEvent[] = [
  say('u1', 'list files'),
  agent('t0', 'agent.thinking', 0),
  agent('ev_a', 'agent.tool_use', 0, { name: 'bash', input: { command: 'ls' } }),
  agent('ev_b', 'agent.custom_tool_use', 0, { name: 'lookup', input: {} }),
];

describe('buildMessages', () => {
  it('a user message alone is one user message of its blocks', () => {
    expect(buildMessages([say('u1', 'hi', 'there')], new Map(), new Map())).toEqual([
      { role: 'user', content: [text('hi'), text('there')] },
    ]);
  });

  it('a turn is its recorded response verbatim — thinking and signature included — not its events', () => {
    const events = [
      say('u1', 'hi'),
      agent('e1', 'agent.thinking', 0),
      agent('e2', 'agent.message', 0, { content: [] }),
    ];
    const recorded = new Map([[0, respond([thinking, text('hello')])]]);
    expect(buildMessages(events, recorded, new Map())).toEqual([
      { role: 'user', content: [text('hi')] },
      { role: 'assistant', content: [thinking, text('hello')] },
    ]);
  });

  it('tool results become tool_result blocks naming the model’s ids, in one user message, before the next turn', () => {
    const events = [
      ...toolTurn,
      result('r_b', 'ev_b', 'found', 'user.custom_tool_result', { is_error: true }),
      result('r_a', 'ev_a', 'a.txt'),
      agent('t1', 'agent.message', 1),
    ];
    expect(buildMessages(events, responses, ids)).toEqual([
      { role: 'user', content: [text('list files')] },
      { role: 'assistant', content: responses.get(0)!.content },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_b', content: [text('found')], is_error: true },
          { type: 'tool_result', tool_use_id: 'toolu_a', content: [text('a.txt')], is_error: false },
        ],
      },
      { role: 'assistant', content: [text('all done')] },
    ]);
  });

  it('a user message among the results merges with them, tool_results first', () => {
    const events = [
      ...toolTurn,
      result('r_a', 'ev_a', 'a'),
      say('u2', 'hurry'),
      result('r_b', 'ev_b', 'b', 'user.custom_tool_result'),
    ];
    const messages = buildMessages(events, responses, ids);
    expect(messages.at(-1)!.content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_a', content: [text('a')], is_error: false },
      { type: 'tool_result', tool_use_id: 'toolu_b', content: [text('b')], is_error: false },
      text('hurry'),
    ]);
    expect(conversationProblems(messages)).toEqual([]);
  });

  it('consecutive user messages merge into one', () => {
    expect(buildMessages([say('u1', 'a'), say('u2', 'b')], new Map(), new Map())).toEqual([
      { role: 'user', content: [text('a'), text('b')] },
    ]);
  });

  it('skips every other event type, including agent.tool_result and the later events of a turn', () => {
    const noise = [
      'session.status_running',
      'span.model_request_start',
      'agent.tool_result',
      'session.error',
      'user.interrupt',
      'agent.mcp_tool_use',
    ];
    const events = [
      say('u1', 'hi'),
      ...noise.map((type, i) => agent(`n${i}`, type, 0)),
      agent('e1', 'agent.message', 0),
      agent('e2', 'agent.message', 0),
    ];
    expect(buildMessages(events, new Map([[0, respond([text('once')])]]), new Map())).toEqual([
      { role: 'user', content: [text('hi')] },
      { role: 'assistant', content: [text('once')] },
    ]);
  });

  it('keeps text, image and document blocks of a user message and leaves out what has no content (redacted)', () => {
    const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBOR' } };
    const doc = {
      type: 'document',
      source: { type: 'text', media_type: 'text/plain', data: 'notes' },
      title: 'n',
    };
    const event: HistoryEvent = {
      id: 'u1',
      type: 'user.message',
      body: { content: [text('see'), image, { type: 'redacted' }, doc] },
      turn: null,
    };
    expect(buildMessages([event], new Map(), new Map())).toEqual([
      { role: 'user', content: [text('see'), image, doc] },
    ]);
  });

  it('a result without content has none, and is_error is false unless the event says true', () => {
    const events = [
      ...toolTurn,
      result('r_a', 'ev_a'),
      result('r_b', 'ev_b', undefined, 'user.custom_tool_result', { is_error: null }),
    ];
    expect(buildMessages(events, responses, ids).at(-1)!.content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_a', is_error: false },
      { type: 'tool_result', tool_use_id: 'toolu_b', is_error: false },
    ]);
  });

  it('is pure: frozen inputs are read, not changed, and the output does not alias the recorded content array', () => {
    const answered = [
      ...toolTurn,
      result('r_a', 'ev_a', 'a'),
      result('r_b', 'ev_b', 'b', 'user.custom_tool_result'),
    ];
    const events = Object.freeze(
      answered.map((e) => Object.freeze({ ...e, body: Object.freeze({ ...e.body }) })),
    );
    const once = buildMessages(events, responses, ids);
    (once[1]!.content as ContentBlock[]).push(text('extra'));
    expect(responses.get(0)!.content).toHaveLength(3);
    expect(buildMessages(events, responses, ids)).toEqual(buildMessages(answered, responses, ids));
  });
});

describe('buildMessages refuses a history that breaks the API’s rules, naming the event', () => {
  const complete = [
    ...toolTurn,
    result('r_a', 'ev_a', 'a'),
    result('r_b', 'ev_b', 'b', 'user.custom_tool_result'),
  ];
  const cases: Array<[string, HistoryEvent[], HistoryViolation, string]> = [
    ['a result for a call no event made', [...toolTurn, result('r_x', 'ev_nope')], 'unknown_tool_use', 'r_x'],
    [
      'a result before any assistant message',
      [say('u1', 'x'), result('r_a', 'ev_a')],
      'unknown_tool_use',
      'r_a',
    ],
    [
      'a second result for one call',
      [...complete, result('r_a2', 'ev_a', 'again')],
      'duplicate_tool_result',
      'r_a2',
    ],
    [
      'a call left unanswered before the next turn',
      [...toolTurn, result('r_a', 'ev_a'), agent('t1', 'agent.message', 1)],
      'unpaired_tool_use',
      'ev_b',
    ],
    [
      'a call left unanswered at the end',
      [...toolTurn, result('r_a', 'ev_a'), say('u2', 'well?')],
      'unpaired_tool_use',
      'ev_b',
    ],
    [
      'an agent event of a turn with no recorded response',
      [...complete, agent('t9', 'agent.message', 9)],
      'missing_response',
      't9',
    ],
    [
      'an agent event with no turn',
      [say('u1', 'x'), agent('t', 'agent.message', null)],
      'missing_response',
      't',
    ],
    ['an assistant message first', [agent('t0', 'agent.message', 1)], 'roles_not_alternating', 't0'],
    [
      'two turns with no user message between',
      [say('u1', 'x'), agent('a', 'agent.message', 1), agent('b', 'agent.message', 2)],
      'roles_not_alternating',
      'b',
    ],
    ['a user.message without a content array', [{ ...say('u1'), body: {} }], 'malformed_event', 'u1'],
    [
      'a result without a tool_use_id',
      [...toolTurn, { ...result('r', 'ev_a'), body: {} }],
      'malformed_event',
      'r',
    ],
  ];
  const recorded = new Map([...responses, [2, respond([text('two')])]]);
  it.each(cases)('%s', (_, events, violation, eventId) => {
    let caught: unknown;
    try {
      buildMessages(events, recorded, ids);
    } catch (err) {
      caught = err;
    }
    expect(caught).toMatchObject({ name: 'HistoryError', violation, eventId });
    expect((caught as Error).message).toContain(eventId);
  });
});
