import { sql } from 'drizzle-orm';
import { describe, expect, it, vi } from 'vitest';
import { createApp } from '../../src/api/app.js';
import { PollGate } from '../../src/api/poll-gate.js';
import { WakeHub } from '../../src/api/wake.js';
import { rows } from '../../src/db/handle.js';
import { newId } from '../../src/ids.js';
import type { Item } from '../../src/queue/types.js';
import { apiKey } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import { backdateLease, lapseLease, readWork, seedClaimBacklog } from '../helpers/factories.js';
import { errorType, platformSetup, type WireItem } from '../helpers/platform.js';
import { useNodeServer } from '../helpers/server.js';

const step = (lease: string, extra: Record<string, unknown> = {}) => ({
  lease,
  kind: 'model_turn',
  ttl_seconds: 60,
  ...extra,
});

describe('POST /v1/platform/work/{id}/complete_and_claim', () => {
  const t = useTestDb('pg', { poolSize: 20 });

  it('completes the held item under its proof and answers the next item of the kind, as claim answers it', async () => {
    const p = await platformSetup(t.db);
    const first = await p.enqueue('model_turn', 'loop-1');
    const second = await p.enqueue('model_turn', 'loop-2');
    const held = (await p.claim('model_turn'))!;
    expect(held.id).toBe(first);
    const res = await p.post(`/work/${first}/complete_and_claim`, step(held.lease));
    expect(res.status).toBe(200);
    const next = (await res.json()) as WireItem;
    expect(Object.keys(next).sort()).toEqual(Object.keys(held).sort());
    expect(next).toMatchObject({
      id: second,
      session_id: 'loop-2',
      kind: 'model_turn',
      claims: 1,
      reclaimed: false,
    });
    expect(await readWork(t.db, first)).toMatchObject({ state: 'stopped', lease: null });
    expect(await readWork(t.db, second)).toMatchObject({ state: 'active', lease: next.lease });
    // The answered proof is the one every later write echoes.
    expect((await p.post(`/work/${second}/complete`, { lease: next.lease })).status).toBe(204);
  });

  it('an empty lane completes the held item and answers 200 null', async () => {
    const p = await platformSetup(t.db);
    const id = await p.enqueue('web_exec');
    const held = (await p.claim('web_exec'))!;
    const res = await p.post(`/work/${id}/complete_and_claim`, step(held.lease, { kind: 'web_exec' }));
    expect(res.status).toBe(200);
    expect(await res.json()).toBeNull();
    expect(await readWork(t.db, id)).toMatchObject({ state: 'stopped', lease: null });
  });

  it('claims the kind asked for, which need not be the held item’s', async () => {
    const p = await platformSetup(t.db);
    const turn = await p.enqueue('model_turn');
    const web = await p.enqueue('web_exec');
    const held = (await p.claim('model_turn'))!;
    const res = await p.post(`/work/${turn}/complete_and_claim`, step(held.lease, { kind: 'web_exec' }));
    expect(((await res.json()) as WireItem).id).toBe(web);
  });

  it('a stale proof is refused exactly as complete refuses it, and claims nothing', async () => {
    const p = await platformSetup(t.db);
    const id = await p.enqueue('mcp_exec', 'stale-1');
    const waiting = await p.enqueue('mcp_exec', 'stale-2');
    const first = (await p.claim('mcp_exec'))!;
    await lapseLease(t.db, id);
    const second = (await p.claim('mcp_exec'))!;
    expect(second).toMatchObject({ id, reclaimed: true });

    const viaComplete = await p.post(`/work/${id}/complete`, { lease: first.lease });
    const viaStep = await p.post(`/work/${id}/complete_and_claim`, step(first.lease, { kind: 'mcp_exec' }));
    expect(viaStep.status).toBe(viaComplete.status);
    expect(viaStep.headers.get('x-should-retry')).toBe(viaComplete.headers.get('x-should-retry'));
    const [a, b] = (await Promise.all([viaComplete.json(), viaStep.json()])) as {
      error: { type: string; message: string };
    }[];
    expect(b!.error).toEqual(a!.error);
    expect(b!.error.type).toBe('lease_lost_error');
    expect(viaStep.status).toBe(409);

    expect(await readWork(t.db, id)).toMatchObject({ state: 'active', lease: second.lease });
    expect(await readWork(t.db, waiting)).toMatchObject({ state: 'queued', lease: null, claims: 0 });
  });

  it('one proof settles once: the same proof again is a 409 that claims nothing', async () => {
    const p = await platformSetup(t.db);
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await p.enqueue('model_turn', `twice-${i}`));
    const held = (await p.claim('model_turn'))!;
    expect((await p.post(`/work/${held.id}/complete_and_claim`, step(held.lease))).status).toBe(200);
    const again = await p.post(`/work/${held.id}/complete_and_claim`, step(held.lease));
    expect(await errorType(again, 409)).toBe('lease_lost_error');
    expect(await readWork(t.db, ids[2]!)).toMatchObject({ state: 'queued', claims: 0 });
  });

  it('a malformed work id is a 404, a malformed lease a 409, a bad body a 400: none completes or claims', async () => {
    const p = await platformSetup(t.db);
    const id = await p.enqueue('model_turn', 'bad-1');
    const waiting = await p.enqueue('model_turn', 'bad-2');
    const held = (await p.claim('model_turn'))!;
    expect(await errorType(await p.post('/work/work_x/complete_and_claim', step(held.lease)), 404)).toBe(
      'not_found_error',
    );
    expect(await errorType(await p.post(`/work/${id}/complete_and_claim`, step('yesterday')), 409)).toBe(
      'lease_lost_error',
    );
    expect(
      await errorType(await p.post(`/work/${newId('work')}/complete_and_claim`, step(held.lease)), 409),
    ).toBe('lease_lost_error');
    for (const body of [
      undefined,
      {},
      { lease: held.lease },
      { lease: held.lease, kind: 'model_turn' },
      step(held.lease, { kind: 'bogus' }),
      step(held.lease, { ttl_seconds: 0 }),
      step(held.lease, { ttl_seconds: 3601 }),
      step(held.lease, { block_ms: 0 }),
      step(held.lease, { block_ms: 20_001 }),
      step(held.lease, { output: 'done' }),
      step(held.lease, { lease: null }),
    ]) {
      const res = await p.post(`/work/${id}/complete_and_claim`, body);
      expect(await errorType(res, 400), JSON.stringify(body)).toBe('invalid_request_error');
    }
    expect(await readWork(t.db, id)).toMatchObject({ state: 'active', lease: held.lease });
    expect(await readWork(t.db, waiting)).toMatchObject({ state: 'queued', claims: 0 });
  });

  it('with block_ms it completes first, then waits for the kind: an item enqueued during the wait is answered', async () => {
    const p = await platformSetup(t.db);
    const id = await p.enqueue('web_exec', 'wait-1');
    const held = (await p.claim('web_exec'))!;
    const answer = p.post(
      `/work/${id}/complete_and_claim`,
      step(held.lease, { kind: 'web_exec', block_ms: 10_000 }),
    );
    // The completion has committed while the request still waits.
    await vi.waitFor(async () => expect((await readWork(t.db, id))!.state).toBe('stopped'), {
      timeout: 5_000,
      interval: 20,
    });
    const later = await p.enqueue('web_exec', 'wait-2');
    const res = await answer;
    expect(res.status).toBe(200);
    expect((await res.json()) as WireItem).toMatchObject({ id: later, claims: 1 });
  });

  it('with block_ms an empty lane answers null once the wait is over, the held item finished', async () => {
    const p = await platformSetup(t.db);
    const id = await p.enqueue('outputs_harvest');
    const held = (await p.claim('outputs_harvest'))!;
    const started = performance.now();
    const res = await p.post(
      `/work/${id}/complete_and_claim`,
      step(held.lease, { kind: 'outputs_harvest', block_ms: 300 }),
    );
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(await res.json()).toBeNull();
    expect((await readWork(t.db, id))!.state).toBe('stopped');
  });

  it('with block_ms a stale proof is refused at once, without waiting', async () => {
    const p = await platformSetup(t.db);
    const id = await p.enqueue('web_exec');
    const held = (await p.claim('web_exec'))!;
    expect((await p.post(`/work/${id}/complete`, { lease: held.lease })).status).toBe(204);
    const started = performance.now();
    const res = await p.post(
      `/work/${id}/complete_and_claim`,
      step(held.lease, { kind: 'web_exec', block_ms: 20_000 }),
    );
    expect(await errorType(res, 409)).toBe('lease_lost_error');
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('a wait over the long-poll cap is a 429 that leaves the held item held; the retry with the same proof settles it', async () => {
    const gate = new PollGate({ perKey: 1, perProcess: 100 });
    const app = createApp(
      { db: t.db, wake: new WakeHub(), log: { warn: () => {}, error: () => {} } },
      { pollGate: gate },
    );
    const key = await apiKey(t.db, 'platform');
    const p = await platformSetup(t.db);
    const post = (path: string, body: unknown) =>
      Promise.resolve(
        app.request(`/v1/platform${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }),
      );
    const id = await p.enqueue('web_exec', 'gate-1');
    const waiting = await p.enqueue('web_exec', 'gate-2');
    const held = (await p.claim('web_exec'))!;
    const parked = post('/work/claim', { kind: 'outputs_harvest', ttl_seconds: 60, block_ms: 1_000 });
    await vi.waitFor(() => expect(gate.open()).toBe(1), { timeout: 5_000, interval: 5 });
    const refused = await post(
      `/work/${id}/complete_and_claim`,
      step(held.lease, { kind: 'web_exec', block_ms: 500 }),
    );
    expect(await errorType(refused, 429)).toBe('rate_limit_error');
    expect(await readWork(t.db, id)).toMatchObject({ state: 'active', lease: held.lease });
    expect(await readWork(t.db, waiting)).toMatchObject({ state: 'queued', claims: 0 });
    expect((await parked).status).toBe(200);
    const retried = await post(
      `/work/${id}/complete_and_claim`,
      step(held.lease, { kind: 'web_exec', block_ms: 500 }),
    );
    expect(((await retried.json()) as WireItem).id).toBe(waiting);
    expect((await readWork(t.db, id))!.state).toBe('stopped');
  });
});

describe('complete_and_claim loops over real HTTP connections to the Node server', () => {
  const t = useTestDb('pg');
  const server = useNodeServer(t);

  it('12 claimers drain 1,500 items: no item is held by two at once, every item completes exactly once, stale proofs claim nothing', async () => {
    const total = 1_500;
    const clients = 12;
    /** Every this many steps a claimer's lease lapses (as if it stalled) and it sets the item aside. */
    const stallEvery = 40;
    await seedClaimBacklog(t.db, total, 'web_exec');
    const key = await apiKey(t.db, 'platform');
    const post = (path: string, body: unknown) =>
      fetch(`${server.baseURL}/v1/platform/work${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const handedOut = new Map<string, WireItem[]>();
    const completions = new Map<string, number>();
    const reclaimed = new Map<string, () => void>();
    const staleCalls: Promise<void>[] = [];
    let refused = 0;

    const take = (item: WireItem | null) => {
      if (!item) return null;
      handedOut.set(item.id, [...(handedOut.get(item.id) ?? []), item]);
      if (item.reclaimed) reclaimed.get(item.id)?.();
      return item;
    };
    const answer = async (res: Response, what: string) => {
      if (res.status !== 200) throw new Error(`${what} answered ${res.status}: ${await res.text()}`);
      return take((await res.json()) as WireItem | null);
    };
    /** A stalled holder wakes once its item went to someone else and sends its step: refused. */
    const stall = async (item: WireItem) => {
      const stale = { id: item.id, lease: item.lease } as Item;
      const handedOn = new Promise<void>((resolve) => reclaimed.set(item.id, resolve));
      await backdateLease(t.db, stale, 120_000);
      staleCalls.push(
        handedOn.then(async () => {
          const res = await post(`/${item.id}/complete_and_claim`, {
            lease: stale.lease,
            kind: 'web_exec',
            ttl_seconds: 60,
          });
          expect(await errorType(res, 409)).toBe('lease_lost_error');
          refused++;
        }),
      );
    };
    const claimer = async (n: number) => {
      // Half the claimers wait a little on an empty lane, half answer at once.
      const block = n % 2 === 0 ? { block_ms: 50 } : {};
      let item = await answer(await post('/claim', { kind: 'web_exec', ttl_seconds: 60, ...block }), 'claim');
      for (let steps = 1; item; steps++) {
        // An item stalls at most once, so it is handed out at most twice.
        if (steps % stallEvery === 0 && !item.reclaimed) {
          await stall(item);
          item = await answer(await post('/claim', { kind: 'web_exec', ttl_seconds: 60 }), 'claim');
          continue;
        }
        const res = await post(`/${item.id}/complete_and_claim`, {
          lease: item.lease,
          kind: 'web_exec',
          ttl_seconds: 60,
          ...block,
        });
        const held = item;
        item = await answer(res, 'complete_and_claim');
        completions.set(held.id, (completions.get(held.id) ?? 0) + 1);
      }
    };
    await Promise.all(Array.from({ length: clients }, (_, n) => claimer(n)));
    await Promise.all(staleCalls);

    // Stalls did happen, and every stalled holder's proof was refused.
    expect(staleCalls.length).toBeGreaterThan(10);
    expect(refused).toBe(staleCalls.length);
    expect(handedOut.size).toBe(total);
    for (const [id, hands] of handedOut) {
      // Twice only when the first holder's lease lapsed: the second hand-out says so.
      expect(
        hands.map((h) => h.reclaimed),
        id,
      ).toEqual(hands.length === 1 ? [false] : [false, true]);
      expect(
        hands.map((h) => h.claims),
        id,
      ).toEqual(hands.length === 1 ? [1] : [1, 2]);
    }
    expect(completions.size).toBe(total);
    expect([...completions.values()].every((n) => n === 1)).toBe(true);
    // Nothing was leased on a refused call's behalf: every item is finished, none left held.
    const [left] = await rows<{ n: number }>(
      t.db,
      sql`SELECT count(*)::int AS n FROM work_items WHERE state <> 'stopped'`,
    );
    expect(left!.n).toBe(0);
  });
});
