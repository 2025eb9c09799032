import { describe, expect, it } from 'vitest';
import { MAX_REARMS, postEvents, rearm, settleTurn, type ToolJudge } from '../../src/loop/index.js';
import { ack, claim, heartbeat, NO_HEARTBEAT, poll, stop } from '../../src/queue/index.js';
import { openCalls } from '../../src/sessions/index.js';
import { environmentWithKey, testApi } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import { lapseLease } from '../helpers/factories.js';
import { apiSession, eventsOf, workOf } from '../helpers/sessions.js';

const API = { kind: 'api' } as const;
const judge: ToolJudge = {
  isCustom: () => false,
  evaluate: () => ({ evaluated_permission: 'allow', evaluation: { type: 'always_allow' } }),
};

describe('re-arming a session’s tool calls', () => {
  const t = useTestDb('pg');

  /** A session whose agent has called bash once: one open call, one queued tool_exec item. */
  async function calling(environmentId?: string) {
    const s = await apiSession(t.db, environmentId ? { environmentId } : {});
    await postEvents(
      t.db,
      s.sessionId,
      [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }],
      API,
    );
    const item = await claim(t.db, 'model_turn', 60_000);
    await settleTurn(
      t.db,
      item!,
      0,
      {
        kind: 'response',
        inputSeq: 1,
        content: [{ type: 'tool_use', id: 'toolu_1', name: 'bash', input: { command: 'crash' } }],
        stopReason: 'tool_use',
        usage: {},
      },
      judge,
    );
    return s;
  }

  it('a tool_exec item that stops with a call open is replaced by a fresh one, and the call counts a re-arm', async () => {
    const { sessionId, environmentId } = await calling();
    const polled = await poll(t.db, environmentId, 5_000);
    await stop(t.db, environmentId, polled!.id, true);
    expect(await rearm(t.db, sessionId, 'ended')).toEqual({ open: 1, failed: 0, enqueued: true });
    expect((await workOf(t.db, sessionId)).filter((w) => w.kind === 'tool_exec').map((w) => w.state)).toEqual(
      ['stopped', 'queued'],
    );
    expect((await openCalls(t.db, sessionId))[0]!.rearms).toBe(1);
  });

  it('the stop route re-arms from the stop statement itself: a force stop with a call open leaves a fresh tool_exec item', async () => {
    const e = await environmentWithKey(t.db);
    const { sessionId } = await calling(e.environmentId);
    const api = testApi(t.db);
    const polled = (await (
      await api.call('GET', `/v1/environments/${e.environmentId}/work/poll`, { key: e.key })
    ).json()) as { id: string };
    const res = await api.call('POST', `/v1/environments/${e.environmentId}/work/${polled.id}/stop`, {
      key: e.key,
      body: { force: true },
    });
    expect(res.status).toBe(200);
    expect((await workOf(t.db, sessionId)).filter((w) => w.kind === 'tool_exec').map((w) => w.state)).toEqual(
      ['stopped', 'queued'],
    );
    expect((await openCalls(t.db, sessionId))[0]!.rearms).toBe(1);
  });

  it('nothing open, nothing done: an item stopped after its calls were answered is not replaced', async () => {
    const { sessionId } = await apiSession(t.db);
    expect(await rearm(t.db, sessionId, 'ended')).toEqual({ open: 0, failed: 0, enqueued: false });
    expect(await workOf(t.db, sessionId)).toEqual([]);
  });

  it(`a call delivered ${MAX_REARMS + 1} times without an answer is answered with an error, the session told why, and the next turn enqueued`, async () => {
    const { sessionId } = await calling();
    for (let i = 0; i < MAX_REARMS; i++) {
      expect(await rearm(t.db, sessionId, 'redelivered')).toMatchObject({ open: 1, failed: 0 });
    }
    expect(await rearm(t.db, sessionId, 'redelivered')).toMatchObject({ open: 1, failed: 1 });
    const log = await eventsOf(t.db, sessionId);
    expect(log.slice(-2).map((e) => e.type)).toEqual(['user.tool_result', 'session.error']);
    expect(log.at(-2)!.body).toMatchObject({ is_error: true });
    expect(log.at(-1)!.body).toMatchObject({
      error: {
        type: 'unknown_error',
        retry_status: { type: 'terminal' },
        message: expect.stringContaining('bash'),
      },
    });
    expect(await openCalls(t.db, sessionId)).toEqual([]);
    expect(
      (await workOf(t.db, sessionId)).filter((w) => w.kind === 'model_turn' && w.state === 'queued'),
    ).toHaveLength(1);
  });

  it('a worker that dies holding the item each time: the poll that hands it out again counts the delivery, and the hand-out past the bound gives up', async () => {
    const e = await environmentWithKey(t.db);
    const { sessionId } = await calling(e.environmentId);
    const api = testApi(t.db);
    const handedOut: string[] = [];
    // The first hand-out is the call's delivery; each of the next MAX_REARMS counts a re-arm;
    // the one after that gives up on the call.
    for (let i = 0; i < MAX_REARMS + 2; i++) {
      const res = await api.call('GET', `/v1/environments/${e.environmentId}/work/poll`, { key: e.key });
      const item = (await res.json()) as { id: string } | null;
      expect(item, `hand-out ${i + 1}`).not.toBeNull();
      handedOut.push(item!.id);
      await ack(t.db, e.environmentId, item!.id);
      await heartbeat(t.db, e.environmentId, item!.id, NO_HEARTBEAT, 30);
      await lapseLease(t.db, item!.id); // the worker died running the tool
    }
    expect(new Set(handedOut).size).toBe(MAX_REARMS + 2);
    const log = await eventsOf(t.db, sessionId);
    expect(log.at(-1)!.type).toBe('session.error');
    expect(await openCalls(t.db, sessionId)).toEqual([]);
  });
});
