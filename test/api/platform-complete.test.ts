import { describe, expect, it } from 'vitest';
import { newId } from '../../src/ids.js';
import { useTestDb } from '../helpers/db.js';
import { lapseLease, readWork } from '../helpers/factories.js';
import { errorType, platformSetup } from '../helpers/platform.js';

describe('POST /v1/platform/work/{id}/complete', () => {
  const t = useTestDb('pg');

  it('the full cycle enqueue → claim → extend → complete over HTTP finishes the item once', async () => {
    const p = await platformSetup(t.db);
    const id = await p.enqueue('model_turn');
    const item = (await p.claim('model_turn'))!;
    expect(item.id).toBe(id);
    const extended = await p.post(`/work/${id}/extend`, { lease: item.lease, ttl_seconds: 300 });
    const { lease } = (await extended.json()) as { lease: string };
    const done = await p.post(`/work/${id}/complete`, { lease });
    expect(done.status).toBe(204);
    expect(await done.text()).toBe('');
    const row = await readWork(t.db, id);
    expect(row).toMatchObject({ state: 'stopped', lease: null });
    expect(row!.stoppedAt).not.toBeNull();
    expect(await p.claim('model_turn')).toBeNull();
    // Exactly one accepted completion: the same proof again is a lost lease.
    const again = await p.post(`/work/${id}/complete`, { lease });
    expect(await errorType(again, 409)).toBe('lease_lost_error');
  });

  it('after a reclaim the previous holder cannot complete; the new holder can', async () => {
    const p = await platformSetup(t.db);
    const id = await p.enqueue('mcp_exec');
    const first = (await p.claim('mcp_exec'))!;
    await lapseLease(t.db, id);
    const second = (await p.claim('mcp_exec'))!;
    const stale = await p.post(`/work/${id}/complete`, { lease: first.lease });
    expect(stale.headers.get('x-should-retry')).toBe('false');
    expect(await errorType(stale, 409)).toBe('lease_lost_error');
    expect(await readWork(t.db, id)).toMatchObject({ state: 'active', lease: second.lease });
    expect((await p.post(`/work/${id}/complete`, { lease: second.lease })).status).toBe(204);
  });

  it('a malformed work id is a 404, a malformed lease a 409, a bad body a 400', async () => {
    const p = await platformSetup(t.db);
    await p.enqueue('model_turn');
    const item = (await p.claim('model_turn'))!;
    expect(await errorType(await p.post('/work/work_x/complete', { lease: item.lease }), 404)).toBe(
      'not_found_error',
    );
    expect(await errorType(await p.post(`/work/${item.id}/complete`, { lease: 'yesterday' }), 409)).toBe(
      'lease_lost_error',
    );
    expect(await errorType(await p.post(`/work/${newId('work')}/complete`, { lease: item.lease }), 409)).toBe(
      'lease_lost_error',
    );
    for (const body of [undefined, {}, { lease: null }, { lease: item.lease, result: 'ok' }]) {
      expect(await errorType(await p.post(`/work/${item.id}/complete`, body), 400)).toBe(
        'invalid_request_error',
      );
    }
    expect(await readWork(t.db, item.id)).toMatchObject({ state: 'active', lease: item.lease });
  });
});
