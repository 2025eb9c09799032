/**
 * The Node server bounds how long a client may take to send a request
 * (LEASEHOLD_REQUEST_TIMEOUT_MS, here 1 s): one that declares a body and stops sending, or
 * sends it a byte at a time, is answered 408 and cut off — Node's own bound is five minutes.
 * An event stream, whose request arrived whole, outlives the bound. The cut-off tests wait for
 * the server to act, their bounds only saying how long that may take; the stream's test waits
 * out three bounds on purpose, since Node's timer is what it tests.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { apiKey } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import { openRawSocket } from '../helpers/raw-socket.js';
import { type RunningServer, startServer } from '../helpers/server.js';
import { apiSession } from '../helpers/sessions.js';

const TIMEOUT_MS = 1_000;
/** The timeout, Node's check interval (a quarter of it) and a margin for a busy machine. */
const CUT_OFF_WITHIN_MS = TIMEOUT_MS + TIMEOUT_MS / 4 + 3_000;

describe('the Node server’s request timeout', () => {
  const t = useTestDb('pg');
  let server: RunningServer;
  let key: string;

  beforeAll(async () => {
    server = await startServer({
      databaseUrl: t.url!,
      env: { LEASEHOLD_REQUEST_TIMEOUT_MS: String(TIMEOUT_MS) },
    });
  });
  // Each test starts from empty tables, the server's own admin key gone with them.
  beforeEach(async () => {
    key = await apiKey(t.db, 'admin');
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** A platform enqueue's head declaring `length` body bytes, then `start` of the body. */
  async function declaredPost(length: number, start: string) {
    const c = await openRawSocket(server.port);
    const sent = performance.now();
    c.socket.write(
      `POST /v1/platform/work HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${key}\r\n` +
        `content-type: application/json\r\ncontent-length: ${length}\r\n\r\n${start}`,
    );
    return { ...c, sent };
  }

  it('a client that declares a body and stops sending is answered 408 and cut off within the timeout', async () => {
    const c = await declaredPost(100, '{"kind":');
    const closedAt = await c.closed;
    expect(c.answer()).toMatch(/^HTTP\/1\.1 408 /);
    expect(closedAt - c.sent).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(closedAt - c.sent).toBeLessThan(CUT_OFF_WITHIN_MS);
    // The item it was declaring was never enqueued.
    const { rows } = await t.pool!.query('SELECT count(*)::int AS n FROM work_items');
    expect(rows[0].n).toBe(0);
  });

  it('a client trickling a body within the size cap is answered 408 and cut off within the timeout', async () => {
    // 1,000 bytes declared, a byte every 50 ms: whole in 50 s, were it let.
    const c = await declaredPost(1000, '');
    const trickle = setInterval(() => c.socket.write(' '), 50);
    try {
      const closedAt = await c.closed;
      expect(c.answer()).toMatch(/^HTTP\/1\.1 408 /);
      expect(closedAt - c.sent).toBeLessThan(CUT_OFF_WITHIN_MS);
    } finally {
      clearInterval(trickle);
    }
  });

  it('an event stream stays open past the timeout: its request arrived whole', async () => {
    const { sessionId } = await apiSession(t.db);
    const admin = { authorization: `Bearer ${key}` };
    const ac = new AbortController();
    const res = await fetch(`${server.baseURL}/v1/sessions/${sessionId}/events/stream`, {
      headers: admin,
      signal: ac.signal,
    });
    expect(res.status).toBe(200);
    // Read in the background: what arrived, and whether the stream ended.
    let text = '';
    let ended = false;
    let onData = () => {};
    const reading = (async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          text += decoder.decode(chunk, { stream: true });
          onData();
        }
      } catch {
        // aborted below
      }
      ended = true;
      onData();
    })();
    try {
      // Three timeouts pass with the stream open (the wait is what is tested: Node's timer).
      await new Promise((r) => setTimeout(r, 3 * TIMEOUT_MS));
      expect(ended).toBe(false);
      // And it still carries what is appended now.
      const frame = new Promise<void>((resolve, reject) => {
        onData = () => {
          if (text.includes('event: user.message')) resolve();
          else if (ended) reject(new Error(`the stream ended before the message's frame: ${text}`));
        };
      });
      const posted = await fetch(`${server.baseURL}/v1/sessions/${sessionId}/events`, {
        method: 'POST',
        headers: { ...admin, 'content-type': 'application/json' },
        body: JSON.stringify({ events: [{ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }] }),
      });
      expect(posted.status).toBeLessThan(300);
      await frame;
    } finally {
      ac.abort();
      await reading;
    }
  });
});
