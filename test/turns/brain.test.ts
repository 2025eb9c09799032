import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { sql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { check, ensureJournalStream, read } from '../../src/journal/index.js';
import { postEvents } from '../../src/loop/index.js';
import { claim, type Item } from '../../src/queue/index.js';
import { runBrainTurn, TURN_STEP } from '../../src/turns/brain.js';
import type { Model, ModelCallContext, ModelRequest, ModelResponse } from '../../src/turns/model.js';
import { ScriptedModel } from '../../src/turns/scripted-model.js';
import { useTestDb } from '../helpers/db.js';
import { conversationProblems } from '../helpers/messages-checks.js';
import { useNatsServer } from '../helpers/nats.js';
import { apiSession, eventsOf, workOf } from '../helpers/sessions.js';

const MINUTE = 60_000;
const API = { kind: 'api' } as const;
const usage = { input_tokens: 3, output_tokens: 2 };
const say = (text: string): ModelResponse => ({
  content: [{ type: 'text', text }],
  stop_reason: 'end_turn',
  usage,
});
const bash = (id: string, command: string): ModelResponse => ({
  content: [{ type: 'tool_use', id, name: 'bash', input: { command } }],
  stop_reason: 'tool_use',
  usage,
});
const message = (text: string) => ({ type: 'user.message', content: [{ type: 'text', text }] });

/** A model that counts its calls and can be made to wait inside one. */
class CountingModel implements Model {
  readonly requests: ModelRequest[] = [];
  hold: Promise<void> | null = null;
  constructor(readonly inner: ScriptedModel) {}
  async create(request: ModelRequest, context: ModelCallContext): Promise<ModelResponse> {
    this.requests.push(structuredClone(request));
    const response = await this.inner.create(request, context);
    if (this.hold) await this.hold;
    return response;
  }
}

describe('the brain: one durable turn per model_turn item', () => {
  const t = useTestDb('pg');
  const nats = useNatsServer();
  let nc: NatsConnection;
  beforeAll(async () => {
    nc = await nats.connect();
    await ensureJournalStream(await jetstreamManager(nc));
  });
  const deps = (model: Model) => ({ db: t.db, js: jetstream(nc), model });

  async function claimTurn(sessionId: string): Promise<Item> {
    const item = await claim(t.db, 'model_turn', MINUTE);
    expect(item?.sessionId).toBe(sessionId);
    return item!;
  }

  it('answers a message with one model call: running, the agent message, idle end_turn, the item complete', async () => {
    const { sessionId } = await apiSession(t.db);
    await postEvents(t.db, sessionId, [message('hello')], API);
    const model = new CountingModel(new ScriptedModel([say('hi there')]));
    const outcome = await runBrainTurn(deps(model), await claimTurn(sessionId), { ttlMs: MINUTE });
    expect(outcome).toMatchObject({ outcome: 'committed' });
    expect((await eventsOf(t.db, sessionId)).map((e) => e.type)).toEqual([
      'user.message',
      'session.status_running',
      'agent.message',
      'session.status_idle',
    ]);
    expect(model.requests).toHaveLength(1);
    expect(model.requests[0]).toMatchObject({
      model: 'claude-test',
      system: 'You are a test.',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }],
    });
    expect(model.requests[0]!.tools.map((d) => d.name)).toEqual([
      'bash',
      'read',
      'write',
      'edit',
      'glob',
      'grep',
      'lookup',
    ]);
    expect((await workOf(t.db, sessionId)).map((w) => w.state)).toEqual(['stopped']);
  });

  it('the next request pairs each tool_use with its result and carries the recorded response whole', async () => {
    const { sessionId } = await apiSession(t.db);
    await postEvents(t.db, sessionId, [message('run ls')], API);
    const first: ModelResponse = {
      content: [
        { type: 'thinking', thinking: 'I should list files.', signature: 'sig-1' },
        { type: 'text', text: 'Listing.' },
        { type: 'tool_use', id: 'toolu_9', name: 'bash', input: { command: 'ls' } },
      ],
      stop_reason: 'tool_use',
      usage,
    };
    const model = new CountingModel(new ScriptedModel([first, say('two files')]));
    await runBrainTurn(deps(model), await claimTurn(sessionId), { ttlMs: MINUTE });
    const call = (await eventsOf(t.db, sessionId)).find((e) => e.type === 'agent.tool_use')!;
    await postEvents(
      t.db,
      sessionId,
      [
        {
          type: 'user.tool_result',
          tool_use_id: call.id,
          content: [{ type: 'text', text: 'a b' }],
          is_error: false,
        },
      ],
      API,
    );
    await runBrainTurn(deps(model), await claimTurn(sessionId), { ttlMs: MINUTE });
    const second = model.requests[1]!;
    expect(conversationProblems(second.messages)).toEqual([]);
    expect(second.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'run ls' }] },
      { role: 'assistant', content: first.content },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'toolu_9',
            content: [{ type: 'text', text: 'a b' }],
            is_error: false,
          },
        ],
      },
    ]);
  });

  it('a message that arrives while the model thinks is answered by a chained turn that sees the first answer before it', async () => {
    const { sessionId } = await apiSession(t.db);
    await postEvents(t.db, sessionId, [message('first')], API);
    let release!: () => void;
    const model = new CountingModel(new ScriptedModel([say('answer one'), say('answer two')]));
    model.hold = new Promise((r) => {
      release = r;
    });
    const running = runBrainTurn(deps(model), await claimTurn(sessionId), { ttlMs: MINUTE });
    while (model.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
    await postEvents(t.db, sessionId, [message('second')], API);
    release();
    await running;
    model.hold = null;
    await runBrainTurn(deps(model), await claimTurn(sessionId), { ttlMs: MINUTE });
    expect(model.requests[1]!.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'first' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'answer one' }] },
      { role: 'user', content: [{ type: 'text', text: 'second' }] },
    ]);
    expect(conversationProblems(model.requests[1]!.messages)).toEqual([]);
  });

  it('a brain that dies in its settlement is taken over: rescheduled, the recorded response settled once, the model not called again', async () => {
    const { sessionId } = await apiSession(t.db);
    await postEvents(t.db, sessionId, [message('do it')], API);
    const model = new CountingModel(new ScriptedModel([bash('toolu_1', 'make')]));
    const item = await claimTurn(sessionId);

    // Holder A: its model call waits until the session row is held here, so its settlement
    // (after its journal commit) waits on that row.
    let releaseModel!: () => void;
    model.hold = new Promise((r) => {
      releaseModel = r;
    });
    const held = await t.pool!.connect();
    let runningB: Promise<unknown> = Promise.resolve();
    const runningA = runBrainTurn(deps(model), { ...item }, { ttlMs: MINUTE });
    try {
      await held.query('BEGIN');
      while (model.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
      await held.query('SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE', [sessionId]);
      releaseModel();
      const journalHas = async (type: string) =>
        (await read(jetstream(nc), sessionId, TURN_STEP)).some((r) => r.type === type);
      while (!(await journalHas('commit'))) await new Promise((r) => setTimeout(r, 10));
      // A is as good as dead: its lease lapses and brain B reclaims the item.
      await t.db.execute(
        sql`UPDATE work_items SET lease_expires_at = now() - interval '1 second' WHERE id = ${item.id}`,
      );
      const itemB = await claim(t.db, 'model_turn', MINUTE);
      expect(itemB).toMatchObject({ id: item.id, reclaimed: true, claims: 2 });
      runningB = runBrainTurn(deps(model), itemB!, { ttlMs: MINUTE });
    } finally {
      await held.query('COMMIT');
      held.release();
    }
    const [a, b] = await Promise.all([runningA, runningB]);
    expect([a, b].map((o) => (o as { outcome: string }).outcome).sort()).toEqual(['lease_lost', 'recovered']);
    expect(model.requests).toHaveLength(1);
    const log = await eventsOf(t.db, sessionId);
    expect(log.map((e) => e.type)).toEqual([
      'user.message',
      'session.status_running',
      'session.status_rescheduled',
      'session.status_running',
      'agent.tool_use',
      'session.status_idle',
    ]);
    expect(await workOf(t.db, sessionId)).toMatchObject([
      { kind: 'model_turn', state: 'stopped' },
      { kind: 'tool_exec', state: 'queued' },
    ]);
    const report = await check(nc, sessionId);
    expect(report.steps.map((st) => [st.stepId, st.violations])).toEqual([[TURN_STEP, []]]);
    expect(report.ok()).toBe(true);
  });

  it('an interrupt while the model thinks leaves the turn nothing to write: no agent events, the session idle', async () => {
    const { sessionId } = await apiSession(t.db);
    await postEvents(t.db, sessionId, [message('long task')], API);
    let release!: () => void;
    const model = new CountingModel(new ScriptedModel([bash('toolu_1', 'sleep 1000')]));
    model.hold = new Promise((r) => {
      release = r;
    });
    const running = runBrainTurn(deps(model), await claimTurn(sessionId), { ttlMs: MINUTE });
    while (model.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
    await postEvents(t.db, sessionId, [{ type: 'user.interrupt' }], API);
    release();
    expect(await running).toMatchObject({ outcome: 'lease_lost' });
    expect((await eventsOf(t.db, sessionId)).map((e) => e.type)).toEqual([
      'user.message',
      'session.status_running',
      'user.interrupt',
      'session.status_idle',
    ]);
    expect((await workOf(t.db, sessionId)).every((w) => w.state === 'stopped')).toBe(true);
  });
});
