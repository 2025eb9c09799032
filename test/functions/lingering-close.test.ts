import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LINGER_MS } from '../../functions/lingering-close.js';
import { apiKey } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import { rawPost } from '../helpers/raw-post.js';
import { openRawSocket } from '../helpers/raw-socket.js';
import { type RunningServer, startServer } from '../helpers/server.js';

/** Far over the 1 MiB cap, so the client is still writing when the 413 is sent. */
const BODY = Buffer.alloc(16 * 1024 * 1024, 0x78);
const TRIALS = 30;

interface Outcome {
  status?: number;
  type?: string;
  error?: string;
}

/** One POST whose body the server refuses before reading it: what the client got. */
function postOversized(port: number, key: string, encoding: 'content-length' | 'chunked'): Promise<Outcome> {
  return rawPost(port, '/v1/platform/work', key, BODY, encoding).then(
    (a) => ({ status: a.status, type: a.body?.error?.type }),
    (err: NodeJS.ErrnoException) => ({ error: err.code ?? err.message }),
  );
}

describe('the Node server’s lingering close', () => {
  const t = useTestDb('pg');
  let server: RunningServer;
  let key: string;

  beforeAll(async () => {
    server = await startServer({ databaseUrl: t.url! });
  });
  // Each test starts from empty tables.
  beforeEach(async () => {
    key = await apiKey(t.db, 'platform');
  });
  afterAll(async () => {
    await server?.stop();
  });

  for (const encoding of ['content-length', 'chunked'] as const) {
    it(`a client still writing an oversized body (${encoding}) reads its 413 every time, never a reset`, async () => {
      const outcomes: Outcome[] = [];
      for (let i = 0; i < TRIALS; i++) outcomes.push(await postOversized(server.port, key, encoding));
      expect(outcomes.filter((o) => o.error)).toEqual([]);
      expect(outcomes.every((o) => o.status === 413 && o.type === 'request_too_large')).toBe(true);
    });
  }

  it('a client that never finishes its body nor closes is cut off once the linger ends', async () => {
    // Half-open allowed: this client does not close when the server does, as a stuck one would not.
    const {
      socket,
      answer,
      ended: serverEnded,
      closed,
    } = await openRawSocket(server.port, {
      allowHalfOpen: true,
    });
    // 100 MiB declared, 1 KiB sent: the answer comes at once, the rest trickles. The client
    // asks to close after it (as Node's agentless requests do); a keep-alive client's unread body
    // is read and dropped by Node itself, on a connection that stays open.
    socket.write(
      `POST /v1/platform/work HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\nauthorization: Bearer ${key}\r\n` +
        `content-type: application/json\r\ncontent-length: ${100 * 1024 * 1024}\r\n\r\n${'x'.repeat(1024)}`,
    );
    // The server half-closes after its answer and reads on; once it gives up, the next byte
    // the client sends is answered with a reset, which closes the client's socket.
    const trickle = setInterval(() => socket.write('x'), 50);
    try {
      const finAt = await serverEnded;
      expect(answer()).toMatch(/^HTTP\/1\.1 413 /);
      expect(answer().toLowerCase()).toContain('connection: close');
      const closedAt = await closed;
      expect(closedAt - finAt).toBeGreaterThanOrEqual(LINGER_MS - 100);
      expect(closedAt - finAt).toBeLessThan(LINGER_MS + 2_000);
    } finally {
      clearInterval(trickle);
      socket.destroy();
    }
  });
});
