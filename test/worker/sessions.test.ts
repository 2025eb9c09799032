/**
 * Agents, sessions and their events on the Worker as deployed, inside workerd, over the Neon
 * driver: create an agent and a session, send a message, list the log, and follow it on the
 * event stream — which has no wake-up feed here, so it re-reads the log's head, and reads the
 * database while its body is written (after the request's handler has returned). This Worker
 * has no BRAIN binding: the message's turn waits in the queue for a brain elsewhere, played
 * here by the loop's own calls.
 */
import { exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { issueApiKey } from '../../src/auth/credentials.js';
import { createEnvironment } from '../helpers/factories.js';
import { runTurn, workOf } from '../helpers/sessions.js';
import { withDb } from './db.js';

type WireEvent = { id: string; type: string } & Record<string, unknown>;

const call = (path: string, key: string, init: { method?: string; body?: unknown } = {}) =>
  (exports as unknown as { default: { fetch(r: Request): Promise<Response> } }).default.fetch(
    new Request(`http://leasehold.test${path}`, {
      method: init.method ?? 'GET',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    }),
  );

async function ok<T>(path: string, key: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  const res = await call(path, key, init);
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${init.method ?? 'GET'} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

/** The stream's SSE frames as they arrive. */
function frames(res: Response) {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  const queue: Array<{ event: string; data: string }> = [];
  let ended = false;
  async function fill(): Promise<void> {
    const { value, done } = await reader.read();
    if (done) {
      ended = true;
      return;
    }
    buffer += value;
    let cut = buffer.indexOf('\n\n');
    while (cut >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      queue.push({ event, data: data.join('\n') });
      cut = buffer.indexOf('\n\n');
    }
  }
  let pending: Promise<void> | null = null;
  return {
    /** The next frame, or null when the stream ended; fails after `ms`. */
    async next(ms = 10_000): Promise<{ event: string; data: string } | null> {
      const deadline = Date.now() + ms;
      while (queue.length === 0 && !ended) {
        if (Date.now() > deadline) throw new Error('no frame in time');
        pending ??= fill().finally(() => {
          pending = null;
        });
        await Promise.race([pending, new Promise((r) => setTimeout(r, Math.max(1, deadline - Date.now())))]);
      }
      return queue.shift() ?? null;
    },
    cancel: () => reader.cancel().catch(() => {}),
  };
}

describe('sessions on the Worker under workerd', () => {
  it('creates an agent and a session, takes a message, lists the log and streams what is appended after the stream opens', async () => {
    const { key, environmentId } = await withDb(async (db) => ({
      key: (await issueApiKey(db, 'worker sessions', 'admin', null)).key,
      environmentId: await createEnvironment(db, 'self_hosted'),
    }));
    const agent = await ok<{ id: string; version: number }>('/v1/agents', key, {
      method: 'POST',
      body: {
        name: 'worker agent',
        model: 'claude-test',
        tools: [
          { type: 'agent_toolset_20260401' },
          {
            type: 'custom',
            name: 'lookup',
            description: 'Looks a word up.',
            input_schema: { type: 'object', properties: { word: { type: 'string' } } },
          },
        ],
      },
    });
    expect(agent).toMatchObject({ type: 'agent', version: 1 });
    const session = await ok<{ id: string; status: string }>('/v1/sessions', key, {
      method: 'POST',
      body: { agent: agent.id, environment_id: environmentId },
    });
    expect(session).toMatchObject({ type: 'session', status: 'idle', agent: { id: agent.id } });
    const events = `/v1/sessions/${session.id}/events`;

    const res = await call(`${events}/stream`, key);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const stream = frames(res);
    try {
      const sent = await ok<{ data: WireEvent[] }>(events, key, {
        method: 'POST',
        body: { events: [{ type: 'user.message', content: [{ type: 'text', text: 'hello, worker' }] }] },
      });
      expect(sent.data).toMatchObject([{ type: 'user.message' }]);
      // No BRAIN binding: the turn is queued for a brain elsewhere.
      expect((await withDb((db) => workOf(db, session.id))).map((w) => [w.kind, w.state, w.lane])).toEqual([
        ['model_turn', 'queued', 'claim'],
      ]);

      const first = (await stream.next())!;
      expect(first.event).toBe('user.message');
      expect(JSON.parse(first.data)).toEqual(sent.data[0]);

      // A brain elsewhere takes the turn and answers; the stream carries what it wrote.
      await withDb((db) => runTurn(db, session.id, [{ type: 'text', text: 'hello from the brain' }]));
      const streamed: WireEvent[] = [JSON.parse(first.data) as WireEvent];
      for (let i = 0; i < 3; i++) {
        const frame = (await stream.next())!;
        const event = JSON.parse(frame.data) as WireEvent;
        expect(frame.event).toBe(event.type);
        streamed.push(event);
      }
      expect(streamed.map((e) => e.type)).toEqual([
        'user.message',
        'session.status_running',
        'agent.message',
        'session.status_idle',
      ]);

      const listed = await ok<{ data: WireEvent[]; next_page: string | null }>(`${events}?limit=100`, key);
      expect(listed.data).toEqual(streamed);
      expect(listed.next_page).toBeNull();
      expect(await ok(`/v1/sessions/${session.id}`, key)).toMatchObject({
        id: session.id,
        status: 'idle',
        usage: { input_tokens: 10, output_tokens: 5 },
      });
    } finally {
      await stream.cancel();
    }
  });
});
