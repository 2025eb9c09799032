import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { RenderedSql } from '../../src/db/fixed-sql.js';
import { rows } from '../../src/db/handle.js';
import { renderSql } from '../../src/db/render.js';
import {
  ack,
  claim,
  DEFAULT_RECLAIM_MS,
  enqueue,
  getWork,
  heartbeat,
  NO_HEARTBEAT,
  poll,
  stop,
  updateMetadata,
  type Work,
  WorkNotFoundError,
} from '../../src/queue/index.js';
import { useTestDb } from '../helpers/db.js';
import {
  ageReservation,
  countWork,
  createSession,
  insertWork,
  lapseLease,
  leaseWindowMs,
  readWork,
  seedPollItems,
  setCreatedAt,
  setupSession,
  wireWork,
} from '../helpers/factories.js';
import { capture, genericPlan, sentQueries, workRowsFetched } from '../helpers/plans.js';

const WORK_ID = /^work_[0-9a-hjkmnp-tv-z]{24}$/;
const TRACE = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tracestate: 'v=1' };

describe.each(['pg', 'pglite'] as const)('poll (%s)', (driver) => {
  const t = useTestDb(driver);

  it('returns null when the environment has nothing to hand out', async () => {
    const { environmentId } = await setupSession(t.db);
    expect(await poll(t.db, environmentId, 60_000)).toBeNull();
  });

  it('hands out a queued tool_exec item as a queued reservation with no lifecycle stamps', async () => {
    const { environmentId, sessionId } = await setupSession(t.db);
    const { work: enqueued } = await enqueue(t.db, { environmentId, sessionId, kind: 'tool_exec' });
    const work = await poll(t.db, environmentId, 60_000);
    expect(work).toEqual({
      id: enqueued.id,
      environmentId,
      dataType: 'session',
      sessionId,
      healthcheckId: null,
      kind: 'tool_exec',
      state: 'queued',
      metadata: {},
      createdAt: enqueued.createdAt,
      acknowledgedAt: null,
      startedAt: null,
      lastHeartbeat: null,
      stopRequestedAt: null,
      stoppedAt: null,
      leaseExpiresAt: expect.any(String),
      claims: 1,
      traceContext: null,
    });
  });

  it('the first hand-out keeps the id enqueue minted, so a listed item stays addressable', async () => {
    const { environmentId, sessionId } = await setupSession(t.db);
    const { work: enqueued } = await enqueue(t.db, { environmentId, sessionId, kind: 'tool_exec' });
    const work = await poll(t.db, environmentId, 60_000);
    expect(work!.id).toBe(enqueued.id);
    expect((await getWork(t.db, environmentId, enqueued.id)).leaseExpiresAt).toBe(work!.leaseExpiresAt);
  });

  it.each([50, 5_000, 600_000])(
    'stamps the reservation as the hand-out plus the default window, whatever window the poll names (%i ms)',
    async (reclaimMs) => {
      const { environmentId, sessionId } = await setupSession(t.db);
      await enqueue(t.db, { environmentId, sessionId, kind: 'tool_exec' });
      const work = await poll(t.db, environmentId, reclaimMs);
      expect(await leaseWindowMs(t.db, work!.id)).toBeCloseTo(DEFAULT_RECLAIM_MS, 6);
      expect((await readWork(t.db, work!.id))!.lease).toBe(work!.leaseExpiresAt);
    },
  );

  it("a later poll re-offers an un-acked item handed out longer ago than its own window, whatever the first poll's", async () => {
    const { environmentId, sessionId } = await setupSession(t.db);
    await enqueue(t.db, { environmentId, sessionId, kind: 'tool_exec' });
    const first = await poll(t.db, environmentId, 600_000);
    await ageReservation(t.db, first!.id, 30_000);
    // Handed out 30 s ago (margins of tens of seconds, so a slow machine cannot blur them):
    // too young for a 10-minute or a 2-minute window, old enough for a 10-second one.
    expect(await poll(t.db, environmentId, 600_000)).toBeNull();
    expect(await poll(t.db, environmentId, 120_000)).toBeNull();
    const second = await poll(t.db, environmentId, 10_000);
    expect(second).toMatchObject({ state: 'queued', claims: 2 });
    expect(second!.id).not.toBe(first!.id);
    expect(await readWork(t.db, first!.id)).toBeNull();
  });

  it('the window counts from the hand-out: a long-window poll leaves a minutes-old reservation alone, a default one takes it', async () => {
    const { environmentId, sessionId } = await setupSession(t.db);
    await enqueue(t.db, { environmentId, sessionId, kind: 'tool_exec' });
    const first = await poll(t.db, environmentId, 50);
    await ageReservation(t.db, first!.id, 120_000);
    expect(await poll(t.db, environmentId, 600_000)).toBeNull();
    expect(await poll(t.db, environmentId, 119_000)).toMatchObject({ claims: 2 });
  });

  it('a reservation younger than every window keeps every other poll off the item', async () => {
    const { environmentId, sessionId } = await setupSession(t.db);
    await enqueue(t.db, { environmentId, sessionId, kind: 'tool_exec' });
    const first = await poll(t.db, environmentId, 600_000);
    // Pushed into the future: however fast the next statements run, it is not yet 1 s old.
    await ageReservation(t.db, first!.id, -1_000);
    expect(await poll(t.db, environmentId, 1)).toBeNull();
    expect(await poll(t.db, environmentId, 600_000)).toBeNull();
    expect((await readWork(t.db, first!.id))!.claims).toBe(1);
  });

  it('a lapsed reservation is re-offered under a fresh id, keeping session, created_at, metadata and trace context', async () => {
    const { environmentId, sessionId } = await setupSession(t.db);
    const { work: enqueued } = await enqueue(t.db, {
      environmentId,
      sessionId,
      kind: 'tool_exec',
      metadata: { origin: 'turn-3' },
      traceContext: TRACE,
    });
    const first = await poll(t.db, environmentId, 60_000);
    await lapseLease(t.db, first!.id);
    const second = await poll(t.db, environmentId, 60_000);
    expect(second!.id).toMatch(WORK_ID);
    expect(second!.id).not.toBe(first!.id);
    expect(second).toMatchObject({
      environmentId,
      sessionId,
      kind: 'tool_exec',
      state: 'queued',
      createdAt: enqueued.createdAt,
      metadata: { origin: 'turn-3' },
      traceContext: TRACE,
      claims: 2,
    });
    // The row moved to the new id: nothing is left under the old one.
    expect(await readWork(t.db, first!.id)).toBeNull();
    await expect(getWork(t.db, environmentId, first!.id)).rejects.toThrow(WorkNotFoundError);
    expect(await countWork(t.db)).toBe(1);
  });

  it('every re-hand-out mints another id and counts one more claim', async () => {
    const { environmentId, sessionId } = await setupSession(t.db);
    const { work } = await enqueue(t.db, { environmentId, sessionId, kind: 'tool_exec' });
    const ids = [work.id];
    const claims: number[] = [];
    for (let i = 0; i < 4; i++) {
      const polled = await poll(t.db, environmentId, 60_000);
      if (i > 0) ids.push(polled!.id);
      claims.push(polled!.claims);
      await lapseLease(t.db, polled!.id);
    }
    expect(new Set(ids).size).toBe(4);
    expect(claims).toEqual([1, 2, 3, 4]);
  });

  it('a starting item is protected by its startup lease, not the reclaim window, and reclaimed once it lapses', async () => {
    const { environmentId, sessionId } = await setupSession(t.db);
    await enqueue(t.db, { environmentId, sessionId, kind: 'tool_exec' });
    const polled = await poll(t.db, environmentId, 1);
    // The 1 ms reservation is long gone by the time the ack lands: the ack still wins it.
    const acked = await ack(t.db, environmentId, polled!.id);
    expect(acked.state).toBe('starting');
    expect(await poll(t.db, environmentId, 1)).toBeNull();
    await lapseLease(t.db, polled!.id);
    const reclaimed = await poll(t.db, environmentId, 60_000);
    expect(reclaimed!.id).not.toBe(polled!.id);
    expect(reclaimed).toMatchObject({
      state: 'queued',
      acknowledgedAt: null,
      startedAt: null,
      lastHeartbeat: null,
    });
    expect(await leaseWindowMs(t.db, reclaimed!.id)).toBeCloseTo(DEFAULT_RECLAIM_MS, 6);
  });

  it('an active item whose heartbeat lease lapsed is reclaimed with its ack, start and heartbeat stamps cleared', async () => {
    const target = await setupSession(t.db);
    const held = await wireWork(t.db, target, 'active');
    expect(await poll(t.db, target.environmentId, 1)).toBeNull();
    await lapseLease(t.db, held.id);
    const reclaimed = await poll(t.db, target.environmentId, 60_000);
    expect(reclaimed!.id).not.toBe(held.id);
    expect(reclaimed).toMatchObject({
      state: 'queued',
      acknowledgedAt: null,
      startedAt: null,
      lastHeartbeat: null,
      stopRequestedAt: null,
      stoppedAt: null,
      claims: 2,
    });
    // The new id runs the whole lifecycle again.
    expect((await ack(t.db, target.environmentId, reclaimed!.id)).state).toBe('starting');
    const hb = await heartbeat(t.db, target.environmentId, reclaimed!.id, NO_HEARTBEAT, 30);
    expect(hb).toMatchObject({ state: 'active', leaseExtended: true });
  });

  it('hands out the oldest available item first, by created_at', async () => {
    const { environmentId, sessionId } = await setupSession(t.db);
    const older = await createSession(t.db, environmentId);
    const { work: a } = await enqueue(t.db, { environmentId, sessionId, kind: 'tool_exec' });
    const { work: b } = await enqueue(t.db, { environmentId, sessionId: older, kind: 'tool_exec' });
    // b was enqueued later but is made older: the order is created_at, not insertion.
    await setCreatedAt(t.db, b.id, '2020-01-01T00:00:00Z');
    expect((await poll(t.db, environmentId, 60_000))!.id).toBe(b.id);
    expect((await poll(t.db, environmentId, 60_000))!.id).toBe(a.id);
    expect(await poll(t.db, environmentId, 60_000)).toBeNull();
  });

  it('skips items under a live reservation or lease and hands out the next available one', async () => {
    const { environmentId, sessionId } = await setupSession(t.db);
    const other = await createSession(t.db, environmentId);
    const held = await wireWork(t.db, { environmentId, sessionId }, 'starting');
    const { work: next } = await enqueue(t.db, { environmentId, sessionId: other, kind: 'tool_exec' });
    await setCreatedAt(t.db, next.id, '2999-01-01T00:00:00Z');
    expect((await poll(t.db, environmentId, 60_000))!.id).toBe(next.id);
    expect((await readWork(t.db, held.id))!.state).toBe('starting');
  });

  it('steps past no item in flight: with 1,000 started or active items older than the queue, a poll reads a handful of rows', async () => {
    const { environmentId, ids } = await seedPollItems(t.db, 1_005);
    await t.db.execute(
      sql`UPDATE work_items SET state = CASE WHEN right(id, 1) IN ('0', '5') THEN 'starting' ELSE 'active' END,
                                acknowledged_at = now(), started_at = now(), claims = 1,
                                lease_expires_at = now() + interval '1 minute'
           WHERE environment_id = ${environmentId} AND id < ${ids[1_000]!}`,
    );
    const { fetched, result } = await workRowsFetched(t.db, (tx) => poll(tx, environmentId, 60_000));
    expect(result!.id).toBe(ids[1_000]);
    expect(fetched).toBeLessThanOrEqual(5);
  });

  it('with queued, reserved, held and lapsed items mixed, hands out the oldest available one first', async () => {
    const { environmentId, ids } = await seedPollItems(t.db, 6);
    const set = (id: string, change: ReturnType<typeof sql>) =>
      t.db.execute(sql`UPDATE work_items SET ${change} WHERE id = ${id}`);
    await set(ids[0]!, sql`lease_expires_at = now() + interval '1 minute'`); // reserved just now
    await set(ids[1]!, sql`state = 'active', claims = 1, lease_expires_at = now() - interval '1 second'`);
    await set(ids[2]!, sql`state = 'starting', claims = 1, lease_expires_at = now() + interval '1 minute'`);
    await set(ids[3]!, sql`lease_expires_at = now() - interval '1 minute'`); // reserved long ago
    await set(ids[4]!, sql`state = 'starting', claims = 1, lease_expires_at = now() - interval '1 second'`);
    // A re-hand-out mints a new id; each seeded item has a session of its own, ending in its number.
    const order: string[] = [];
    for (let w = await poll(t.db, environmentId, 1_000); w; w = await poll(t.db, environmentId, 1_000)) {
      order.push(w.sessionId!.split('_').pop()!);
    }
    expect(order).toEqual(['2', '4', '5', '6']);
  });

  it('serves only its own environment', async () => {
    const a = await setupSession(t.db);
    const b = await setupSession(t.db);
    const { work } = await enqueue(t.db, { ...a, kind: 'tool_exec' });
    expect(await poll(t.db, b.environmentId, 60_000)).toBeNull();
    expect((await readWork(t.db, work.id))!.lease).toBeNull();
    expect((await poll(t.db, a.environmentId, 60_000))!.id).toBe(work.id);
  });

  it('never hands out model_turn, web_exec, mcp_exec or outputs_harvest items', async () => {
    const { environmentId, sessionId } = await setupSession(t.db);
    for (const kind of ['model_turn', 'web_exec', 'mcp_exec', 'outputs_harvest'] as const) {
      await enqueue(t.db, { environmentId, sessionId, kind });
    }
    expect(await poll(t.db, environmentId, 60_000)).toBeNull();
    const untouched = await rows<{ n: number }>(
      t.db,
      sql`SELECT count(*)::int AS n FROM work_items
           WHERE state = 'queued' AND lease_expires_at IS NULL AND claims = 0`,
    );
    expect(untouched[0]!.n).toBe(4);
    // They are the claim lane's.
    expect(await claim(t.db, 'web_exec', 60_000)).not.toBeNull();
  });

  it("never hands out a cloud environment's tool_exec item, which stays the claim lane's", async () => {
    const cloud = await setupSession(t.db, 'cloud');
    const { work } = await enqueue(t.db, { ...cloud, kind: 'tool_exec' });
    expect(await poll(t.db, cloud.environmentId, 60_000)).toBeNull();
    expect((await readWork(t.db, work.id))!.claims).toBe(0);
    expect((await claim(t.db, 'tool_exec', 60_000))!.id).toBe(work.id);
  });

  it("a stale worker's ack, heartbeat, stop and patch under the rotated-away id are not found, and the new holder is untouched", async () => {
    const target = await setupSession(t.db);
    const { environmentId } = target;
    // Worker 1 takes the item, tags it, then goes silent until its lease lapses.
    const stale = await wireWork(t.db, target, 'active', { traceContext: TRACE });
    await updateMetadata(t.db, environmentId, stale.id, { step: 'build' }, []);
    const before = await getWork(t.db, environmentId, stale.id);
    await lapseLease(t.db, stale.id);
    // Worker 2 takes it over under a new id: metadata, trace context and created_at carry over.
    const taken = await poll(t.db, environmentId, 60_000);
    expect(taken!.id).not.toBe(stale.id);
    expect(taken).toMatchObject({
      metadata: { step: 'build' },
      traceContext: TRACE,
      createdAt: before.createdAt,
      sessionId: target.sessionId,
    });
    await ack(t.db, environmentId, taken!.id);
    const hb = await heartbeat(t.db, environmentId, taken!.id, NO_HEARTBEAT, 30);
    const held = await getWork(t.db, environmentId, taken!.id);

    // Worker 1 wakes up and carries on under its old id.
    await expect(stop(t.db, environmentId, stale.id, true)).rejects.toThrow(WorkNotFoundError);
    await expect(stop(t.db, environmentId, stale.id, false)).rejects.toThrow(WorkNotFoundError);
    await expect(ack(t.db, environmentId, stale.id)).rejects.toThrow(WorkNotFoundError);
    await expect(heartbeat(t.db, environmentId, stale.id, stale.lastHeartbeat!, 30)).rejects.toThrow(
      WorkNotFoundError,
    );
    await expect(heartbeat(t.db, environmentId, stale.id, NO_HEARTBEAT, 30)).rejects.toThrow(
      WorkNotFoundError,
    );
    await expect(updateMetadata(t.db, environmentId, stale.id, { step: 'x' }, [])).rejects.toThrow(
      WorkNotFoundError,
    );

    expect(await getWork(t.db, environmentId, taken!.id)).toEqual(held);
    expect(held).toMatchObject({ state: 'active', lastHeartbeat: hb.lastHeartbeat, stopRequestedAt: null });
    expect(await countWork(t.db)).toBe(1);
  });

  it('finalizes at most 50 abandoned wind-downs per poll; the rest settle on the next poll', async () => {
    const target = await setupSession(t.db);
    const ids = await insertWork(t.db, target, { state: 'stopping', leaseInMs: -1_000, count: 60 });
    expect(await poll(t.db, target.environmentId, 60_000)).toBeNull();
    expect(await countWork(t.db, 'stopped')).toBe(50);
    expect(await countWork(t.db, 'stopping')).toBe(10);
    expect(await poll(t.db, target.environmentId, 60_000)).toBeNull();
    expect(await countWork(t.db, 'stopped')).toBe(60);
    for (const id of ids) {
      const row = await readWork(t.db, id);
      expect(row).toMatchObject({ state: 'stopped', lease: null, stoppedAt: expect.any(String) });
    }
  });

  it('finalizes abandoned wind-downs in the same statement that hands out an item', async () => {
    const target = await setupSession(t.db);
    const [abandoned] = await insertWork(t.db, target, { state: 'stopping', leaseInMs: -1_000 });
    const { work } = await enqueue(t.db, { ...target, kind: 'tool_exec' });
    expect((await poll(t.db, target.environmentId, 60_000))!.id).toBe(work.id);
    expect((await readWork(t.db, abandoned!))!.state).toBe('stopped');
  });

  it('finalizes a legacy stopping item that has no lease', async () => {
    const target = await setupSession(t.db);
    const { work } = await enqueue(t.db, { ...target, kind: 'tool_exec' });
    await t.db.execute(sql`UPDATE work_items SET state = 'stopping' WHERE id = ${work.id}`);
    expect(await poll(t.db, target.environmentId, 60_000)).toBeNull();
    const after = await getWork(t.db, target.environmentId, work.id);
    expect(after).toMatchObject({ state: 'stopped', leaseExpiresAt: null, stoppedAt: expect.any(String) });
  });

  it('a wind-down under a live lease stays stopping and is never re-offered; after the lapse it settles stopped', async () => {
    const target = await setupSession(t.db);
    const held = await wireWork(t.db, target, 'stopping');
    const before = await getWork(t.db, target.environmentId, held.id);
    expect(await poll(t.db, target.environmentId, 60_000)).toBeNull();
    expect(await getWork(t.db, target.environmentId, held.id)).toEqual(before);
    await lapseLease(t.db, held.id);
    expect(await poll(t.db, target.environmentId, 60_000)).toBeNull();
    const after = await getWork(t.db, target.environmentId, held.id);
    expect(after).toMatchObject({
      id: held.id,
      state: 'stopped',
      leaseExpiresAt: null,
      stoppedAt: expect.any(String),
      stopRequestedAt: before.stopRequestedAt,
      claims: 1,
    });
  });

  it("leaves other environments' abandoned wind-downs alone", async () => {
    const a = await setupSession(t.db);
    const b = await setupSession(t.db);
    const [elsewhere] = await insertWork(t.db, b, { state: 'stopping', leaseInMs: -1_000 });
    expect(await poll(t.db, a.environmentId, 60_000)).toBeNull();
    expect((await readWork(t.db, elsewhere!))!.state).toBe('stopping');
  });

  it('a starting or active item without a lease is never picked: only a lapsed lease frees it', async () => {
    const { environmentId } = await setupSession(t.db);
    for (const state of ['starting', 'active'] as const) {
      const sessionId = await createSession(t.db, environmentId);
      await insertWork(t.db, { environmentId, sessionId }, { state });
    }
    expect(await poll(t.db, environmentId, 60_000)).toBeNull();
  });

  it('never re-offers a stopped item, even one left holding a lapsed lease', async () => {
    const target = await setupSession(t.db);
    await insertWork(t.db, target, { state: 'stopped', leaseInMs: -1_000 });
    expect(await poll(t.db, target.environmentId, 60_000)).toBeNull();
  });
});

describe('poll on real PostgreSQL connections', () => {
  const t = useTestDb('pg', { poolSize: 20 });

  it('concurrent polls of one queued item hand it to exactly one poller', async () => {
    const { environmentId, sessionId } = await setupSession(t.db);
    const { work } = await enqueue(t.db, { environmentId, sessionId, kind: 'tool_exec' });
    const results = await Promise.all(Array.from({ length: 16 }, () => poll(t.db, environmentId, 60_000)));
    const hits = results.filter((w): w is Work => w !== null);
    expect(hits.map((w) => w.id)).toEqual([work.id]);
    expect((await readWork(t.db, work.id))!.claims).toBe(1);
  });

  it('concurrent polls of a lapsed reservation re-offer it once, under one fresh id', async () => {
    const { environmentId, sessionId } = await setupSession(t.db);
    await enqueue(t.db, { environmentId, sessionId, kind: 'tool_exec' });
    const first = await poll(t.db, environmentId, 60_000);
    await lapseLease(t.db, first!.id);
    const results = await Promise.all(Array.from({ length: 16 }, () => poll(t.db, environmentId, 60_000)));
    const hits = results.filter((w): w is Work => w !== null);
    expect(hits).toHaveLength(1);
    expect(hits[0]!.id).not.toBe(first!.id);
    expect(hits[0]!.claims).toBe(2);
    expect(await countWork(t.db)).toBe(1);
  });

  it.each([
    ['records its worker', 'worker-1'],
    ['records no worker (its fixed statement)', undefined],
  ])(
    'under a generic plan made from stale statistics, a poll that %s reads the queue and the leases by their indexes, never the table whole',
    async (_, worker) => {
      const { environmentId } = await seedPollItems(t.db, 2_000);
      await t.db.execute(sql`ANALYZE work_items`); // statistics of a queue with nothing in flight
      const plan = await genericPlan(t.pool!, await capture((db) => poll(db, environmentId, 60_000, worker)));
      expect(plan).not.toMatch(/Seq Scan on work_items/);
      expect(plan).toMatch(/Index Scan using work_items_poll_queued_idx/);
      expect(plan).toMatch(/Index Scan using work_items_poll_lease_idx/);
    },
  );

  it('concurrent polls over several items hand each out exactly once', async () => {
    const { environmentId } = await setupSession(t.db);
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) {
      const sessionId = await createSession(t.db, environmentId);
      ids.push((await enqueue(t.db, { environmentId, sessionId, kind: 'tool_exec' })).work.id);
    }
    const results = await Promise.all(Array.from({ length: 16 }, () => poll(t.db, environmentId, 60_000)));
    const handed = results.filter((w): w is Work => w !== null).map((w) => w.id);
    expect(handed.sort()).toEqual([...ids].sort());
  });
});

describe('poll statement', () => {
  it('a poll that records no worker sends the one fixed statement (its text rendered once), with its own values', async () => {
    const [first] = await sentQueries((db) => poll(db, 'env_a', 60_000));
    const [second] = await sentQueries((db) => poll(db, 'env_b', 2_000));
    expect(first).toBeInstanceOf(RenderedSql);
    expect(second).toBeInstanceOf(RenderedSql);
    const a = renderSql(first!);
    const b = renderSql(second!);
    expect(b.sql).toBe(a.sql);
    expect(a.params).toContain('env_a');
    expect(b.params).toContain('env_b');
    expect(a.params).toContain(DEFAULT_RECLAIM_MS - 60_000);
    expect(b.params).toContain(DEFAULT_RECLAIM_MS - 2_000);
    // A fresh id for a re-hand-out, minted per call.
    const fresh = (p: unknown[]) => p.filter((v) => typeof v === 'string' && WORK_ID.test(v));
    expect(fresh(a.params)).toHaveLength(1);
    expect(fresh(b.params)).not.toEqual(fresh(a.params));
  });

  it('a poll that records its worker is built as its own statement, the record ahead of the same poll', async () => {
    const [recording] = await sentQueries((db) => poll(db, 'env_a', 60_000, 'worker-1'));
    const [plain] = await sentQueries((db) => poll(db, 'env_a', 60_000));
    expect(recording).not.toBeInstanceOf(RenderedSql);
    const text = renderSql(recording!).sql;
    const plainPoll = renderSql(plain!).sql.replace(/^WITH\s+/, '');
    expect(text).toMatch(/worker_polls/);
    // The same poll after the record's CTEs, its parameters renumbered.
    const unnumbered = (s: string) => s.replace(/\$\d+/g, '$').replace(/\s+/g, ' ');
    expect(unnumbered(text)).toContain(unnumbered(plainPoll));
  });
});
