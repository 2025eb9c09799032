import { describe, expect, it } from 'vitest';
import {
  assertLease,
  cancelSession,
  claim,
  complete,
  enqueue,
  LeaseLostError,
  requeue,
  WORK_KINDS,
} from '../../src/queue/index.js';
import { useTestDb } from '../helpers/db.js';
import { countWork, readWork, setupSession } from '../helpers/factories.js';

const MINUTE = 60_000;

describe.each(['pg', 'pglite'] as const)('cancelSession (%s)', (driver) => {
  const t = useTestDb(driver);

  it('stops every kind in every live state, fences the holder and frees the slots', async () => {
    const s = await setupSession(t.db, 'cloud');
    const other = await setupSession(t.db, 'cloud');
    for (const kind of WORK_KINDS) await enqueue(t.db, { ...s, kind });
    const otherItem = await enqueue(t.db, { ...other, kind: 'web_exec' });
    const held = (await claim(t.db, 'model_turn', MINUTE))!;

    expect(await cancelSession(t.db, s.sessionId)).toBe(WORK_KINDS.length);

    await expect(complete(t.db, held)).rejects.toThrow(LeaseLostError);
    await expect(assertLease(t.db, held)).rejects.toThrow(LeaseLostError);
    await expect(requeue(t.db, held)).rejects.toThrow(LeaseLostError);
    const row = await readWork(t.db, held.id);
    expect(row).toMatchObject({ state: 'stopped', lease: null });
    expect(row!.stoppedAt).not.toBeNull();
    expect(row!.stopRequestedAt).not.toBeNull();
    expect(await countWork(t.db, 'stopped')).toBe(WORK_KINDS.length);
    expect((await readWork(t.db, otherItem.work.id))!.state).toBe('queued');
    expect((await enqueue(t.db, { ...s, kind: 'model_turn' })).created).toBe(true);
  });

  it('frees the slot inside the same transaction, so the redirect turn can be enqueued with it', async () => {
    const s = await setupSession(t.db, 'cloud');
    await enqueue(t.db, { ...s, kind: 'model_turn' });
    const redirect = await t.db.transaction(async (tx) => {
      await cancelSession(tx, s.sessionId);
      return enqueue(tx, { ...s, kind: 'model_turn' });
    });
    expect(redirect.created).toBe(true);
    expect(await countWork(t.db, 'queued')).toBe(1);
  });

  it('leaves already stopped items alone and answers 0 for a session with nothing in flight', async () => {
    const s = await setupSession(t.db, 'cloud');
    await enqueue(t.db, { ...s, kind: 'model_turn' });
    expect(await cancelSession(t.db, s.sessionId)).toBe(1);
    expect(await cancelSession(t.db, s.sessionId)).toBe(0);
    expect(await cancelSession(t.db, 'sesn_unknown')).toBe(0);
  });
});
