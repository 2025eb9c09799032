/**
 * Generated sessions: rounds of user messages followed by turns; a turn's tool calls are
 * answered in any order, maybe with a user message among the results, among status noise.
 * Every such history must rebuild into a conversation the fake API accepts, and breaking the
 * pairing (dropping or repeating a result) must be refused.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildMessages, type HistoryEvent } from '../../src/turns/history.js';
import type { ContentBlock, ModelResponse } from '../../src/turns/model.js';
import { conversationProblems } from '../helpers/messages-checks.js';

interface TurnPlan {
  thinking: boolean;
  text: boolean;
  /** One entry per tool call: true = a custom tool. */
  tools: boolean[];
  /** Sort keys for the order the results arrive in. */
  order: number[];
  /** Where among the results a user message arrives, if one does. */
  interject: number | null;
  noise: boolean;
}

interface Session {
  events: HistoryEvent[];
  responses: Map<number, ModelResponse>;
  toolUseIds: Map<string, string>;
  /** Every user text, in log order. */
  texts: string[];
  calls: number;
}

const turnPlan = fc.record({
  thinking: fc.boolean(),
  text: fc.boolean(),
  tools: fc.array(fc.boolean(), { maxLength: 3 }),
  order: fc.array(fc.integer(), { minLength: 3, maxLength: 3 }),
  interject: fc.option(fc.nat({ max: 3 })),
  noise: fc.boolean(),
});
const roundPlan = fc.record({
  says: fc.integer({ min: 1, max: 2 }),
  turns: fc.array(turnPlan, { maxLength: 3 }),
});
const sessionPlan = fc.array(roundPlan, { minLength: 1, maxLength: 4 });

function buildSession(rounds: Array<{ says: number; turns: TurnPlan[] }>): Session {
  const s: Session = { events: [], responses: new Map(), toolUseIds: new Map(), texts: [], calls: 0 };
  let n = 0;
  let turn = 0;
  const say = () => {
    const t = `text ${n}`;
    s.texts.push(t);
    s.events.push({
      id: `u${n++}`,
      type: 'user.message',
      body: { content: [{ type: 'text', text: t }] },
      turn: null,
    });
  };
  for (const round of rounds) {
    for (let i = 0; i < round.says; i++) say();
    round.turns.forEach((plan, i) => {
      // Only the round's last turn may end without tool calls: another turn follows a result.
      const tools = i < round.turns.length - 1 && plan.tools.length === 0 ? [false] : plan.tools;
      const content: ContentBlock[] = [];
      if (plan.thinking) content.push({ type: 'thinking', thinking: `t${turn}`, signature: `sig${turn}` });
      if (plan.text || (!plan.thinking && tools.length === 0))
        content.push({ type: 'text', text: `a${turn}` });
      const calls = tools.map((custom, k) => ({
        custom,
        block: `toolu_${turn}_${k}`,
        event: `ev_${turn}_${k}`,
      }));
      for (const c of calls)
        content.push({ type: 'tool_use', id: c.block, name: c.custom ? 'lookup' : 'bash', input: {} });
      s.responses.set(turn, { content, stop_reason: calls.length ? 'tool_use' : 'end_turn', usage: {} });
      for (const block of content) {
        const type =
          block.type === 'thinking'
            ? 'agent.thinking'
            : block.type === 'text'
              ? 'agent.message'
              : calls.find((c) => c.block === (block as { id: string }).id)!.custom
                ? 'agent.custom_tool_use'
                : 'agent.tool_use';
        const call = calls.find((c) => c.block === (block as { id?: string }).id);
        if (call) s.toolUseIds.set(call.event, call.block);
        s.events.push({ id: call?.event ?? `e${n++}`, type, body: {}, turn });
        if (plan.noise) s.events.push({ id: `e${n++}`, type: 'span.model_request_end', body: {}, turn });
      }
      const answers = calls
        .map((c, k) => ({ c, key: plan.order[k]! }))
        .sort((a, b) => a.key - b.key)
        .map(({ c }) => c);
      answers.forEach((c, k) => {
        if (plan.interject === k) say();
        const [type, field] = c.custom
          ? ['user.custom_tool_result', 'custom_tool_use_id']
          : ['user.tool_result', 'tool_use_id'];
        s.events.push({
          id: `r${n++}`,
          type,
          body: { [field]: c.event, content: [{ type: 'text', text: 'ok' }] },
          turn: null,
        });
        s.calls++;
      });
      turn++;
    });
  }
  return s;
}

describe('buildMessages over generated sessions', () => {
  it('always alternates, pairs every call with its result, and passes the fake API’s checks', () => {
    fc.assert(
      fc.property(sessionPlan, (plan) => {
        const s = buildSession(plan);
        const messages = buildMessages(s.events, s.responses, s.toolUseIds);
        expect(conversationProblems(messages)).toEqual([]);
        // Each turn appears once, as its recorded response, in turn order.
        const assistant = messages.filter((m) => m.role === 'assistant').map((m) => m.content);
        expect(assistant).toEqual([...s.responses.values()].map((r) => r.content));
        // Nothing the user said is lost or reordered, and every call has one result.
        const user = messages
          .filter((m) => m.role === 'user')
          .flatMap((m) => m.content as Array<{ type: string; text?: string }>);
        expect(user.filter((b) => b.type === 'text').map((b) => b.text)).toEqual(s.texts);
        expect(user.filter((b) => b.type === 'tool_result')).toHaveLength(s.calls);
      }),
    );
  });

  it('dropping any one result is refused as an unpaired tool_use', () => {
    const withCalls = sessionPlan.map(buildSession).filter((s) => s.calls > 0);
    fc.assert(
      fc.property(withCalls, fc.nat(), (s, pick) => {
        const results = s.events.filter((e) => e.type.endsWith('tool_result'));
        const dropped = results[pick % results.length]!;
        const events = s.events.filter((e) => e !== dropped);
        expect(() => buildMessages(events, s.responses, s.toolUseIds)).toThrow(
          expect.objectContaining({ name: 'HistoryError', violation: 'unpaired_tool_use' }),
        );
      }),
    );
  });

  it('repeating any one result is refused as a duplicate', () => {
    const withCalls = sessionPlan.map(buildSession).filter((s) => s.calls > 0);
    fc.assert(
      fc.property(withCalls, fc.nat(), (s, pick) => {
        const results = s.events.filter((e) => e.type.endsWith('tool_result'));
        const repeated = results[pick % results.length]!;
        const at = s.events.indexOf(repeated);
        const events = [
          ...s.events.slice(0, at + 1),
          { ...repeated, id: 'again' },
          ...s.events.slice(at + 1),
        ];
        expect(() => buildMessages(events, s.responses, s.toolUseIds)).toThrow(
          expect.objectContaining({ violation: 'duplicate_tool_result', eventId: 'again' }),
        );
      }),
    );
  });
});
