/**
 * Wake-up sources: `ListeningWake` over a real LISTEN on a Neon driver connection (through the
 * local wsproxy, as a Worker holds one per request), and `pollingWake`'s backoff. Waits that
 * run out use short real timeouts passed in; nothing sleeps to move time.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { WebSocket } from 'ws';
import { ListeningWake, pollingWake } from '../../src/api/wake.js';
import { connectNeon, type NeonConnection } from '../../src/db/drivers/neon.js';
import { openTestDb, type TestDb } from '../helpers/db.js';

const CHANNEL = 'leasehold_wake_test';
let testDb: TestDb;
let conn: NeonConnection;

beforeAll(async () => {
  testDb = await openTestDb('pg');
  conn = connectNeon(testDb.url!, {
    webSocketConstructor: WebSocket,
    localProxy: `127.0.0.1:${inject('wsProxyPort')}`,
  });
});

afterAll(async () => {
  await conn?.close();
  await testDb?.close();
});

const notify = (payload: string) => testDb.pool!.query('SELECT pg_notify($1, $2)', [CHANNEL, payload]);
const never = new AbortController().signal;

describe('ListeningWake', () => {
  it('wakes the watchers of the notified key once its LISTEN has committed, and no others', async () => {
    let listens = 0;
    const wake = new ListeningWake(
      (onPayload) => {
        listens++;
        return conn.listen(CHANNEL, onPayload);
      },
      (payload) => payload,
    );
    const a = wake.watch('a');
    const b = wake.watch('b');
    await Promise.all([a.listen!(), b.listen!()]);
    expect(listens).toBe(1);
    await notify('a');
    expect(await a.wait(10_000, never)).toBe(true);
    expect(await b.wait(50, never)).toBe(false);
    a.close();
    b.close();
  });

  it('an unreadable payload (null key) wakes every watcher', async () => {
    const wake = new ListeningWake(
      (onPayload) => conn.listen(CHANNEL, onPayload),
      () => null,
    );
    const a = wake.watch('a');
    await a.listen!();
    await notify('garbage');
    expect(await a.wait(10_000, never)).toBe(true);
    a.close();
  });

  it('a LISTEN the server refuses is reported, and its watchers re-read on the backoff', async () => {
    const refused: unknown[] = [];
    const wake = new ListeningWake(
      // A zero-length identifier: PostgreSQL answers with an error, as a server refusing LISTEN does.
      async () => {
        await testDb.pool!.query('LISTEN ""');
      },
      (payload) => payload,
      (err) => refused.push(err),
    );
    const a = wake.watch('a');
    await a.listen!();
    expect(refused).toHaveLength(1);
    // The backoff's first step (100 ms) ran out inside the wait: a possible change, read again.
    expect(await a.wait(10_000, never)).toBe(true);
    a.close();
  });

  it('silence longer than it trusts reads as a possible change (a LISTEN a pooler never delivers)', async () => {
    const wake = new ListeningWake(
      (onPayload) => conn.listen(CHANNEL, onPayload),
      (payload) => payload,
      undefined,
      20,
    );
    const a = wake.watch('quiet');
    await a.listen!();
    expect(await a.wait(10_000, never)).toBe(true);
    a.close();
  });
});

describe('pollingWake', () => {
  it('a backoff that runs out reads as a change; one the deadline cuts short does not; each step doubles', async () => {
    const w = pollingWake.watch('env');
    expect(w.endsAtDeadline).toBe(true);
    expect(await w.wait(10_000, never)).toBe(true); // 100 ms
    expect(await w.wait(150, never)).toBe(false); // the 200 ms step, cut at 150
    expect(await w.wait(10_000, never)).toBe(true); // 400 ms
    w.close();
  });
});
