import { describe, expect, it } from 'vitest';
import { useTestDb } from '../helpers/db.js';
import { readWork } from '../helpers/factories.js';
import { errorType, platformSetup } from '../helpers/platform.js';

describe('POST /v1/platform/work/{id}/requeue', () => {
  const t = useTestDb('pg');

  it('hands the item back under the same id; its next claim is not a reclaim and counts claims 2', async () => {
    const p = await platformSetup(t.db);
    const id = await p.enqueue('model_turn');
    const item = (await p.claim('model_turn'))!;
    const res = await p.post(`/work/${id}/requeue`, { lease: item.lease });
    expect(res.status).toBe(204);
    expect(await readWork(t.db, id)).toMatchObject({ state: 'queued', lease: null });
    expect(await p.claim('model_turn')).toMatchObject({ id, reclaimed: false, claims: 2 });
  });

  it('a requeued item keeps the live slot: an enqueue meanwhile is covered by it', async () => {
    const p = await platformSetup(t.db);
    const id = await p.enqueue('web_exec');
    const item = (await p.claim('web_exec'))!;
    await p.post(`/work/${id}/requeue`, { lease: item.lease });
    const again = await p.post('/work', {
      environment_id: p.env.environmentId,
      session_id: p.env.sessionId,
      kind: 'web_exec',
    });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ created: false, work: { id, state: 'queued' } });
  });

  it('the proof is spent by the requeue: a second requeue or a complete with it is a 409', async () => {
    const p = await platformSetup(t.db);
    const id = await p.enqueue('model_turn');
    const item = (await p.claim('model_turn'))!;
    await p.post(`/work/${id}/requeue`, { lease: item.lease });
    for (const verb of ['requeue', 'complete']) {
      const res = await p.post(`/work/${id}/${verb}`, { lease: item.lease });
      expect(await errorType(res, 409)).toBe('lease_lost_error');
    }
    expect((await readWork(t.db, id))!.state).toBe('queued');
  });

  it('a malformed work id is a 404, a malformed lease a 409, a bad body a 400', async () => {
    const p = await platformSetup(t.db);
    await p.enqueue('model_turn');
    const item = (await p.claim('model_turn'))!;
    expect(await errorType(await p.post('/work/nope/requeue', { lease: item.lease }), 404)).toBe(
      'not_found_error',
    );
    expect(await errorType(await p.post(`/work/${item.id}/requeue`, { lease: '2026-01-01' }), 409)).toBe(
      'lease_lost_error',
    );
    for (const body of [undefined, {}, { lease: item.lease, delay_seconds: 5 }]) {
      expect(await errorType(await p.post(`/work/${item.id}/requeue`, body), 400)).toBe(
        'invalid_request_error',
      );
    }
    expect(await readWork(t.db, item.id)).toMatchObject({ state: 'active', lease: item.lease });
  });
});
