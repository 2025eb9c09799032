import { describe, expect, it } from 'vitest';
import {
  EventForbiddenError,
  EventRefusedError,
  postEvents,
  settleTurn,
  type ToolJudge,
} from '../../src/loop/index.js';
import { claim } from '../../src/queue/index.js';
import { archiveSession, openCalls } from '../../src/sessions/index.js';
import { useTestDb } from '../helpers/db.js';
import { micros } from '../helpers/management.js';
import { apiSession, eventsOf, workOf } from '../helpers/sessions.js';

const API = { kind: 'api' } as const;
const judge: ToolJudge = {
  isCustom: (name) => name === 'lookup',
  evaluate: (name) =>
    name === 'web_search'
      ? { evaluated_permission: 'deny' }
      : { evaluated_permission: name === 'write' ? 'ask' : 'allow', evaluation: { type: 'always_allow' } },
};
const text = (t: string) => ({ type: 'user.message', content: [{ type: 'text', text: t }] });
const toolUse = (id: string, name: string, input: Record<string, unknown> = {}) => ({
  type: 'tool_use',
  id,
  name,
  input,
});

describe('the session loop', () => {
  const t = useTestDb('pg');

  /** Claims the session's model_turn and settles it with `content` (stop_reason from its tool uses). */
  async function turn(sessionId: string, content: Array<Record<string, unknown>>, turnNo = 0) {
    const item = await claim(t.db, 'model_turn', 60_000);
    expect(item?.sessionId).toBe(sessionId);
    const events = await eventsOf(t.db, sessionId);
    const inputSeq = events.at(-1)!.seq;
    return settleTurn(
      t.db,
      item!,
      turnNo,
      {
        kind: 'response',
        inputSeq,
        content: content as never,
        stopReason: content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn',
        usage: { input_tokens: 10, output_tokens: 5 },
      },
      judge,
    );
  }

  it('a user message is appended as event 1 and enqueues one model_turn; a second one reuses the live slot', async () => {
    const { sessionId } = await apiSession(t.db, { metadata: { team: 'a' } });
    const [first] = await postEvents(t.db, sessionId, [text('hi')], API);
    expect(first).toMatchObject({
      seq: 1,
      type: 'user.message',
      body: { content: [{ type: 'text', text: 'hi' }] },
    });
    expect(first!.id).toMatch(/^sevt_/);
    await postEvents(t.db, sessionId, [text('again')], API);
    const work = await workOf(t.db, sessionId);
    expect(work).toEqual([
      { id: expect.any(String), kind: 'model_turn', state: 'queued', lane: 'claim', metadata: { team: 'a' } },
    ]);
  });

  it("a turn's tool calls become calls, a poll-lane tool_exec item and requires_action naming them", async () => {
    const { sessionId } = await apiSession(t.db, { metadata: { team: 'a' } });
    await postEvents(t.db, sessionId, [text('list files')], API);
    expect(
      await turn(sessionId, [
        { type: 'text', text: 'Let me look.' },
        toolUse('toolu_1', 'bash', { command: 'ls' }),
        toolUse('toolu_2', 'lookup', { word: 'x' }),
      ]),
    ).toBe('completed');
    const log = await eventsOf(t.db, sessionId);
    expect(log.map((e) => e.type)).toEqual([
      'user.message',
      'agent.message',
      'agent.tool_use',
      'agent.custom_tool_use',
      'session.status_idle',
    ]);
    expect(log[2]!.body).toMatchObject({
      name: 'bash',
      input: { command: 'ls' },
      evaluated_permission: 'allow',
    });
    expect(log[4]!.body).toEqual({
      stop_reason: { type: 'requires_action', event_ids: [log[2]!.id, log[3]!.id] },
      stop_details: null,
    });
    expect(log.slice(1, 4).every((e) => e.turn === 0)).toBe(true);
    const work = await workOf(t.db, sessionId);
    expect(work.map((w) => [w.kind, w.state, w.lane])).toEqual([
      ['model_turn', 'stopped', 'claim'],
      ['tool_exec', 'queued', 'poll'],
    ]);
    expect(work[1]!.metadata).toEqual({ team: 'a' });
  });

  it('a partial answer re-announces requires_action with the rest; the last answer enqueues the next turn', async () => {
    const { sessionId } = await apiSession(t.db);
    await postEvents(t.db, sessionId, [text('go')], API);
    await turn(sessionId, [toolUse('toolu_1', 'bash'), toolUse('toolu_2', 'lookup')]);
    const [, bash, lookup] = await eventsOf(t.db, sessionId);
    await postEvents(
      t.db,
      sessionId,
      [
        {
          type: 'user.tool_result',
          tool_use_id: bash!.id,
          content: [{ type: 'text', text: 'a b' }],
          is_error: false,
        },
      ],
      API,
    );
    let log = await eventsOf(t.db, sessionId);
    expect(log.at(-1)).toMatchObject({
      type: 'session.status_idle',
      body: { stop_reason: { type: 'requires_action', event_ids: [lookup!.id] } },
    });
    expect(
      (await workOf(t.db, sessionId)).filter((w) => w.kind === 'model_turn' && w.state === 'queued'),
    ).toHaveLength(0);
    await postEvents(
      t.db,
      sessionId,
      [
        {
          type: 'user.custom_tool_result',
          custom_tool_use_id: lookup!.id,
          content: [{ type: 'text', text: 'found' }],
        },
      ],
      API,
    );
    log = await eventsOf(t.db, sessionId);
    expect(log.at(-1)!.type).toBe('user.custom_tool_result');
    expect(
      (await workOf(t.db, sessionId)).filter((w) => w.kind === 'model_turn' && w.state === 'queued'),
    ).toHaveLength(1);
    expect(await openCalls(t.db, sessionId)).toEqual([]);
  });

  it('the same answer again writes nothing and returns the first; a different one is refused', async () => {
    const { sessionId } = await apiSession(t.db);
    await postEvents(t.db, sessionId, [text('go')], API);
    await turn(sessionId, [toolUse('toolu_1', 'bash')]);
    const bash = (await eventsOf(t.db, sessionId)).find((e) => e.type === 'agent.tool_use')!;
    const answer = {
      type: 'user.tool_result',
      tool_use_id: bash.id,
      content: [{ type: 'text', text: 'ok' }],
      is_error: false,
    };
    const [first] = await postEvents(t.db, sessionId, [answer], API);
    const before = await eventsOf(t.db, sessionId);
    const [again] = await postEvents(t.db, sessionId, [{ ...answer, is_error: false }], API);
    expect(again).toEqual(first);
    expect(await eventsOf(t.db, sessionId)).toEqual(before);
    await expect(
      postEvents(t.db, sessionId, [{ ...answer, content: [{ type: 'text', text: 'different' }] }], API),
    ).rejects.toThrow(EventRefusedError);
    await expect(
      postEvents(
        t.db,
        sessionId,
        [{ type: 'user.tool_result', tool_use_id: 'sevt_unknown', content: [] }],
        API,
      ),
    ).rejects.toThrow(/no agent.tool_use sevt_unknown/);
    expect(await eventsOf(t.db, sessionId)).toEqual(before);
  });

  it('an environment key may post answers only; a message from it is refused and writes nothing', async () => {
    const { sessionId, environmentId } = await apiSession(t.db);
    await expect(
      postEvents(t.db, sessionId, [text('hi')], { kind: 'environment', environmentId }),
    ).rejects.toThrow(EventForbiddenError);
    expect(await eventsOf(t.db, sessionId)).toEqual([]);
  });

  it('an interrupt mid-tool stops the session’s work, answers the open calls with an error and leaves it idle', async () => {
    const { sessionId } = await apiSession(t.db);
    await postEvents(t.db, sessionId, [text('go')], API);
    await turn(sessionId, [toolUse('toolu_1', 'bash', { command: 'sleep 100' })]);
    await postEvents(t.db, sessionId, [{ type: 'user.interrupt' }], API);
    const log = await eventsOf(t.db, sessionId);
    expect(log.slice(-2).map((e) => e.type)).toEqual(['user.tool_result', 'user.interrupt']);
    expect(log.at(-2)!.body).toMatchObject({ is_error: true });
    expect((await workOf(t.db, sessionId)).every((w) => w.state === 'stopped')).toBe(true);
    expect(await openCalls(t.db, sessionId)).toEqual([]);
  });

  it('a refused tool is answered here with an error and the turn chains at once', async () => {
    const { sessionId } = await apiSession(t.db);
    await postEvents(t.db, sessionId, [text('search')], API);
    expect(await turn(sessionId, [toolUse('toolu_1', 'web_search')])).toBe('chained');
    const log = await eventsOf(t.db, sessionId);
    expect(log.map((e) => e.type)).toEqual(['user.message', 'agent.tool_use', 'user.tool_result']);
    expect(log[1]!.body).toMatchObject({ evaluated_permission: 'deny' });
    const work = await workOf(t.db, sessionId);
    expect(work.map((w) => [w.kind, w.state])).toEqual([
      ['model_turn', 'stopped'],
      ['model_turn', 'queued'],
    ]);
  });

  it('a message that arrives while a turn runs is not lost: the turn chains a fresh one', async () => {
    const { sessionId } = await apiSession(t.db);
    await postEvents(t.db, sessionId, [text('first')], API);
    const item = await claim(t.db, 'model_turn', 60_000);
    await postEvents(t.db, sessionId, [text('second')], API);
    expect(
      await settleTurn(
        t.db,
        item!,
        0,
        {
          kind: 'response',
          inputSeq: 1,
          content: [{ type: 'text', text: 'answer to first' }],
          stopReason: 'end_turn',
          usage: {},
        },
        judge,
      ),
    ).toBe('chained');
    const work = await workOf(t.db, sessionId);
    expect(work.map((w) => [w.kind, w.state])).toEqual([
      ['model_turn', 'stopped'],
      ['model_turn', 'queued'],
    ]);
  });

  it('a confirmation sent again is the one recorded and writes nothing; a different verdict is refused', async () => {
    const { sessionId } = await apiSession(t.db);
    await postEvents(t.db, sessionId, [text('write it')], API);
    await turn(sessionId, [toolUse('toolu_1', 'write', { file_path: 'a', content: 'b' })]);
    const call = (await eventsOf(t.db, sessionId)).find((e) => e.type === 'agent.tool_use')!;
    expect(call.body).toMatchObject({ evaluated_permission: 'ask' });
    const allow = { type: 'user.tool_confirmation', tool_use_id: call.id, result: 'allow' };
    const [first] = await postEvents(t.db, sessionId, [allow], API);
    const before = await eventsOf(t.db, sessionId);
    const [again] = await postEvents(t.db, sessionId, [allow], API);
    expect(again).toEqual(first);
    expect(await eventsOf(t.db, sessionId)).toEqual(before);
    await expect(postEvents(t.db, sessionId, [{ ...allow, result: 'deny' }], API)).rejects.toThrow(
      /already confirmed with allow/,
    );
    expect(await eventsOf(t.db, sessionId)).toEqual(before);
  });

  it('an archived session takes no events, and writes nothing for them', async () => {
    const { sessionId } = await apiSession(t.db);
    await archiveSession(t.db, sessionId);
    await expect(postEvents(t.db, sessionId, [text('hello?')], API)).rejects.toThrow(/archived/);
    expect(await eventsOf(t.db, sessionId)).toEqual([]);
    expect(await workOf(t.db, sessionId)).toEqual([]);
  });

  it('concurrent appends from many connections number the log densely with processed_at never decreasing', async () => {
    const { sessionId } = await apiSession(t.db);
    await Promise.all(
      Array.from({ length: 8 }, (_, w) =>
        (async () => {
          for (let i = 0; i < 10; i++) await postEvents(t.db, sessionId, [text(`w${w} m${i}`)], API);
        })(),
      ),
    );
    const log = await eventsOf(t.db, sessionId);
    expect(log.map((e) => e.seq)).toEqual(Array.from({ length: 80 }, (_, i) => i + 1));
    // As instants: the wire's trimmed rendering does not sort as text (`micros`).
    for (let i = 1; i < log.length; i++) {
      expect(micros(log[i]!.processedAt) >= micros(log[i - 1]!.processedAt)).toBe(true);
    }
  });
});
