import { describe, expect, it } from 'vitest';
import { claim, completeThenClaim, LeaseLostError } from '../../src/queue/index.js';
import type { Item } from '../../src/queue/types.js';
import { useTestDb } from '../helpers/db.js';
import { backdateLease, enqueueClaimItems, readWork } from '../helpers/factories.js';

const MINUTE = 60_000;

describe.each(['pg', 'pglite'] as const)('completeThenClaim (%s)', (driver) => {
  const t = useTestDb(driver);

  const queued = (n: number, kind: 'model_turn' | 'web_exec' = 'model_turn') =>
    enqueueClaimItems(t.db, n, kind);

  it('completes the held item and leases the next oldest of the kind', async () => {
    const ids = await queued(3);
    const first = (await claim(t.db, 'model_turn', MINUTE))!;
    const next = await completeThenClaim(t.db, first, 'model_turn', MINUTE);
    expect(next).toMatchObject({ id: ids[1], kind: 'model_turn', reclaimed: false, claims: 1 });
    expect((await readWork(t.db, first.id))!.state).toBe('stopped');
    expect((await readWork(t.db, next!.id))!).toMatchObject({ state: 'active', lease: next!.lease });
  });

  it('an empty lane completes the item and answers null', async () => {
    await queued(1);
    const only = (await claim(t.db, 'model_turn', MINUTE))!;
    expect(await completeThenClaim(t.db, only, 'model_turn', MINUTE)).toBeNull();
    expect((await readWork(t.db, only.id))!.state).toBe('stopped');
  });

  it('a lost lease throws LeaseLostError, leaves the new holder alone and leases nothing', async () => {
    const ids = await queued(2);
    const stale = (await claim(t.db, 'model_turn', MINUTE))!;
    await backdateLease(t.db, stale, 2 * MINUTE);
    const usurper = (await claim(t.db, 'model_turn', MINUTE))!;
    expect(usurper.id).toBe(stale.id);
    await expect(completeThenClaim(t.db, stale, 'model_turn', MINUTE)).rejects.toBeInstanceOf(LeaseLostError);
    expect((await readWork(t.db, stale.id))!).toMatchObject({ state: 'active', lease: usurper.lease });
    expect((await readWork(t.db, ids[1]!))!).toMatchObject({ state: 'queued', claims: 0 });
  });

  it('a proof it never issued throws before reaching the database and leases nothing', async () => {
    const ids = await queued(2);
    const held = (await claim(t.db, 'model_turn', MINUTE))!;
    const forged: Item = { ...held, lease: 'yesterday' };
    await expect(completeThenClaim(t.db, forged, 'model_turn', MINUTE)).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    expect((await readWork(t.db, held.id))!).toMatchObject({ state: 'active', lease: held.lease });
    expect((await readWork(t.db, ids[1]!))!.state).toBe('queued');
  });

  it('a second completion with the same proof is refused and leases nothing', async () => {
    const ids = await queued(3);
    const held = (await claim(t.db, 'model_turn', MINUTE))!;
    const next = (await completeThenClaim(t.db, held, 'model_turn', MINUTE))!;
    expect(next.id).toBe(ids[1]);
    await expect(completeThenClaim(t.db, held, 'model_turn', MINUTE)).rejects.toBeInstanceOf(LeaseLostError);
    expect((await readWork(t.db, ids[2]!))!.state).toBe('queued');
  });

  it('never hands the completed item back, even when its own lease had lapsed', async () => {
    await queued(1);
    const held = (await claim(t.db, 'model_turn', MINUTE))!;
    await backdateLease(t.db, held, 2 * MINUTE);
    expect(await completeThenClaim(t.db, held, 'model_turn', MINUTE)).toBeNull();
    expect((await readWork(t.db, held.id))!.state).toBe('stopped');
  });

  it('claims only the asked kind', async () => {
    await queued(1, 'web_exec');
    await queued(1);
    const held = (await claim(t.db, 'model_turn', MINUTE))!;
    expect(await completeThenClaim(t.db, held, 'mcp_exec', MINUTE)).toBeNull();
  });
});
