import { describe, expect, it } from 'vitest';
import { enqueue } from '../../src/queue/index.js';
import { sessionWork } from '../../src/queue/session-work.js';
import { useTestDb } from '../helpers/db.js';
import { createSession, insertWork, setCreatedAt, setupSession } from '../helpers/factories.js';

describe.each(['pg', 'pglite'] as const)('sessionWork (%s)', (driver) => {
  const t = useTestDb(driver);

  it('a session without items, or an unknown session, yields nothing', async () => {
    const { sessionId } = await setupSession(t.db);
    expect(await sessionWork(t.db, sessionId, 20)).toEqual([]);
    expect(await sessionWork(t.db, 'sesn_missing', 20)).toEqual([]);
  });

  it("returns only that session's items, never a sibling session's or another environment's", async () => {
    const target = await setupSession(t.db);
    const sibling = await createSession(t.db, target.environmentId);
    const elsewhere = await setupSession(t.db, 'cloud');
    const mine = [
      ...(await insertWork(t.db, target, { state: 'stopped', count: 3 })),
      ...(await insertWork(t.db, target, { kind: 'model_turn', state: 'stopped', count: 2 })),
    ];
    await insertWork(
      t.db,
      { environmentId: target.environmentId, sessionId: sibling },
      { state: 'stopped', count: 3 },
    );
    await insertWork(t.db, elsewhere, { kind: 'model_turn', state: 'stopped', count: 3 });
    const listed = await sessionWork(t.db, target.sessionId, 50);
    expect(listed.map((w) => w.id).sort()).toEqual([...mine].sort());
    expect(listed.every((w) => w.sessionId === target.sessionId)).toBe(true);
  });

  it('lists both lanes newest first by created_at, ties broken by id descending', async () => {
    const target = await setupSession(t.db, 'self_hosted');
    const { work: tool } = await enqueue(t.db, { ...target, kind: 'tool_exec' });
    const { work: turn } = await enqueue(t.db, { ...target, kind: 'model_turn' });
    const tied = await insertWork(t.db, target, { kind: 'web_exec', state: 'stopped', count: 3 });
    await setCreatedAt(t.db, tool.id, '2026-01-01T00:00:03Z');
    await setCreatedAt(t.db, turn.id, '2026-01-01T00:00:01Z');
    for (const id of tied) await setCreatedAt(t.db, id, '2026-01-01T00:00:02Z');
    const listed = await sessionWork(t.db, target.sessionId, 50);
    expect(listed.map((w) => w.id)).toEqual([tool.id, ...[...tied].sort().reverse(), turn.id]);
    expect(listed[0]).toMatchObject({ lane: 'poll', kind: 'tool_exec', leaseLive: null });
    expect(listed[listed.length - 1]).toMatchObject({ lane: 'claim', kind: 'model_turn' });
  });

  it('returns at most `limit` items, the newest', async () => {
    const target = await setupSession(t.db);
    const all = await insertWork(t.db, target, { state: 'stopped', count: 6 });
    for (const [i, id] of all.entries()) await setCreatedAt(t.db, id, `2026-01-01T00:00:0${i}Z`);
    expect((await sessionWork(t.db, target.sessionId, 4)).map((w) => w.id)).toEqual([
      all[5],
      all[4],
      all[3],
      all[2],
    ]);
    expect(await sessionWork(t.db, target.sessionId, 1)).toHaveLength(1);
    expect(await sessionWork(t.db, target.sessionId, 100)).toHaveLength(6);
  });
});
