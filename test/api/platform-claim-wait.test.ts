import { describe, expect, it } from 'vitest';
import { createApp } from '../../src/api/app.js';
import { WakeHub } from '../../src/api/wake.js';
import { listenPg } from '../../src/db/drivers/node-pg.js';
import { postEvents, TURN_CHANNEL } from '../../src/loop/index.js';
import { apiKey } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import { platformSetup, type WireItem } from '../helpers/platform.js';
import { apiSession } from '../helpers/sessions.js';

describe('POST /v1/platform/work/claim with block_ms', () => {
  const t = useTestDb('pg', { poolSize: 10 });

  it('waits for an item enqueued during the wait: with no wake-up feed it re-claims on a backoff', async () => {
    const p = await platformSetup(t.db);
    const started = performance.now();
    const waiting = p.post('/work/claim', { kind: 'web_exec', ttl_seconds: 60, block_ms: 5_000 });
    await new Promise((r) => setTimeout(r, 300));
    const id = await p.enqueue('web_exec');
    const res = await waiting;
    expect(res.status).toBe(200);
    expect(((await res.json()) as WireItem).id).toBe(id);
    expect(performance.now() - started).toBeLessThan(2_500);
  });

  it('an empty lane answers null once block_ms has passed, not before', async () => {
    const p = await platformSetup(t.db);
    const started = performance.now();
    const res = await p.post('/work/claim', { kind: 'outputs_harvest', ttl_seconds: 60, block_ms: 400 });
    const took = performance.now() - started;
    expect(await res.text()).toBe('null\n');
    expect(took).toBeGreaterThanOrEqual(390);
    expect(took).toBeLessThan(2_000);
  });

  it('block_ms outside 1–20000 is a 400 and claims nothing', async () => {
    const p = await platformSetup(t.db);
    await p.enqueue('web_exec');
    for (const block_ms of [0, 20_001, 1.5, '100']) {
      const res = await p.post('/work/claim', { kind: 'web_exec', ttl_seconds: 60, block_ms });
      expect(res.status, String(block_ms)).toBe(400);
    }
    expect(await p.claim('web_exec')).not.toBeNull();
  });

  it("a session's new turn wakes a waiting model_turn claim at once, through the turn channel's NOTIFY", async () => {
    const hub = new WakeHub();
    const listener = listenPg(
      t.url!,
      [TURN_CHANNEL],
      () => hub.notify('model_turn'),
      () => hub.notifyAll(),
    );
    try {
      // The listener's LISTEN is in once a notification gets through.
      const app = createApp({ db: t.db, claimWake: hub, log: { warn: () => {}, error: () => {} } });
      const key = await apiKey(t.db, 'platform');
      const claimTurn = (block_ms: number) =>
        app.request('/v1/platform/work/claim', {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ kind: 'model_turn', ttl_seconds: 60, block_ms }),
        });
      await new Promise((r) => setTimeout(r, 200));
      const { sessionId } = await apiSession(t.db);
      const waiting = claimTurn(15_000);
      // By now a claim without the feed re-claims only every second (claims at 0, 0.1, 0.3, 0.7,
      // 1.5, 2.5 s …): a message at 1.6 s would wait about 0.9 s for it.
      await new Promise((r) => setTimeout(r, 1_600));
      const sent = performance.now();
      await postEvents(t.db, sessionId, [{ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }], {
        kind: 'api',
      });
      const res = await waiting;
      const wokeAfter = performance.now() - sent;
      expect(((await res.json()) as WireItem).session_id).toBe(sessionId);
      expect(wokeAfter).toBeLessThan(300);
    } finally {
      await listener.close();
    }
  });
});
