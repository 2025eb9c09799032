import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { rows, type SqlHandle } from '../../src/db/handle.js';
import { poll, pollMany, type Work, wireFolds } from '../../src/queue/index.js';
import { useTestDb } from '../helpers/db.js';
import {
  ageReservation,
  createEnvironment,
  createSession,
  lapseLease,
  leaseWindowMs,
  readWork,
  seedPollItems,
  type WireStage,
  wireWork,
} from '../helpers/factories.js';
import { capture, genericPlan } from '../helpers/plans.js';

const WINDOW_MS = 5_000;

/**
 * An environment with an item in every situation a poll tells apart, each tagged with its role:
 * available (a reservation older than the window, a starting and an active item whose holder
 * went silent, two never handed out) and not (a reservation within the window), and a
 * wind-down whose worker is gone, which a poll finalizes. Returns the environment and each
 * role's id at enqueue.
 */
async function everySituation(db: SqlHandle): Promise<{ environmentId: string; ids: Map<string, string> }> {
  const environmentId = await createEnvironment(db);
  const ids = new Map<string, string>();
  const item = async (role: string, stage: WireStage) => {
    const sessionId = await createSession(db, environmentId);
    const { id } = await wireWork(db, { environmentId, sessionId }, stage, { metadata: { role } });
    ids.set(role, id);
    return id;
  };
  const old = await item('old_reservation', 'reserved');
  await item('recent_reservation', 'reserved');
  const starting = await item('silent_starting', 'starting');
  const active = await item('silent_active', 'active');
  const stopping = await item('abandoned_stopping', 'stopping');
  await item('never_handed_1', 'queued');
  await item('never_handed_2', 'queued');
  // Aged once all are in place: each wireWork polls, and would be handed these first.
  await ageReservation(db, old, 60_000);
  for (const id of [starting, active, stopping]) await lapseLease(db, id);
  return { environmentId, ids };
}

/** A hand-out as a test compares it: its role, whether it kept its id, and what it was given. */
async function handOut(db: SqlHandle, work: Work, ids: Map<string, string>) {
  const role = work.metadata.role!;
  return {
    role,
    keptId: work.id === ids.get(role),
    state: work.state,
    claims: work.claims,
    acknowledgedAt: work.acknowledgedAt,
    lastHeartbeat: work.lastHeartbeat,
    reservationMs: await leaseWindowMs(db, work.id),
  };
}

describe.each(['pg', 'pglite'] as const)('pollMany (%s)', (driver) => {
  const t = useTestDb(driver);

  it('hands out what as many polls one after another would, in the same order, and finalizes the same wind-downs', async () => {
    const alone = await everySituation(t.db);
    const batched = await everySituation(t.db);
    const one: unknown[] = [];
    for (let i = 0; i < 6; i++) {
      const work = await poll(t.db, alone.environmentId, WINDOW_MS);
      if (work) one.push(await handOut(t.db, work, alone.ids));
    }
    const many = await pollMany(t.db, batched.environmentId, WINDOW_MS, 6);
    expect(await Promise.all(many.map((w) => handOut(t.db, w, batched.ids)))).toEqual(one);
    expect(one.map((h) => (h as { role: string }).role)).toEqual([
      'old_reservation',
      'silent_starting',
      'silent_active',
      'never_handed_1',
      'never_handed_2',
    ]);
    // A re-hand-out rotates the id; the first keeps it.
    expect(one.map((h) => (h as { keptId: boolean }).keptId)).toEqual([false, false, false, true, true]);
    for (const env of [alone, batched]) {
      expect((await readWork(t.db, env.ids.get('abandoned_stopping')!))!.state).toBe('stopped');
      expect((await readWork(t.db, env.ids.get('recent_reservation')!))!.claims).toBe(1);
    }
  });

  it('hands out nothing, and writes nothing, when nothing is available', async () => {
    const { environmentId } = await seedPollItems(t.db, 0);
    expect(await pollMany(t.db, environmentId, WINDOW_MS, 4)).toEqual([]);
  });
});

describe('folded polls on real PostgreSQL connections', () => {
  const t = useTestDb('pg');

  it('sixteen polls at once on two environments hand out each item once, the rest find none, in fewer statements than polls', async () => {
    const a = await seedPollItems(t.db, 5);
    const b = await seedPollItems(t.db, 3);
    const folds = wireFolds(t.db);
    const calls = [...Array(8).fill(a.environmentId), ...Array(8).fill(b.environmentId)];
    const got = await Promise.all(
      calls.map((environmentId) => folds.poll({ environmentId, reclaimMs: WINDOW_MS })),
    );
    const handed = got.filter((w): w is Work => w !== null);
    expect(handed.map((w) => w.id).sort()).toEqual([...a.ids, ...b.ids].sort());
    for (const [i, w] of got.entries()) if (w) expect(w.environmentId).toBe(calls[i]);
    expect(got.filter((w) => w === null)).toHaveLength(8);
    expect(folds.polls.statements).toBeLessThan(folds.polls.calls);
    const [row] = await rows<{ n: number }>(
      t.db,
      sql`SELECT count(*)::int AS n FROM work_items WHERE claims <> 1`,
    );
    expect(row!.n).toBe(0);
  });

  it('reaches the picked rows by id under a generic plan made from stale statistics', async () => {
    const { environmentId } = await seedPollItems(t.db, 2_000);
    await t.db.execute(sql`ANALYZE work_items`);
    const plan = await genericPlan(t.pool!, await capture((db) => pollMany(db, environmentId, WINDOW_MS, 4)));
    expect(plan).not.toMatch(/Seq Scan on work_items/);
    expect(plan).toMatch(/Index Scan using work_items_pkey on work_items w\s/);
  });
});
