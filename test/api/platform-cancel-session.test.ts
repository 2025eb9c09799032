import { describe, expect, it } from 'vitest';
import { WORK_KINDS } from '../../src/queue/types.js';
import { useTestDb } from '../helpers/db.js';
import { countWork, createSession, readWork } from '../helpers/factories.js';
import { errorType, platformSetup } from '../helpers/platform.js';

describe('POST /v1/platform/sessions/{session_id}/cancel', () => {
  const t = useTestDb('pg');

  it('stops every in-flight item of the session, whatever its kind or state, and answers how many', async () => {
    const p = await platformSetup(t.db);
    const ids = [];
    for (const kind of WORK_KINDS) ids.push(await p.enqueue(kind));
    await p.claim('model_turn');
    const bystander = await p.enqueue('model_turn', await createSession(t.db, p.env.environmentId));

    const res = await p.post(`/sessions/${p.env.sessionId}/cancel`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ stopped: WORK_KINDS.length });
    for (const id of ids) expect((await readWork(t.db, id))!.state).toBe('stopped');
    expect((await readWork(t.db, bystander))!.state).toBe('queued');
  });

  it('after a cancel the old holder’s complete with its lease is a 409 lease_lost_error', async () => {
    const p = await platformSetup(t.db);
    await p.enqueue('model_turn');
    const item = (await p.claim('model_turn'))!;
    await p.post(`/sessions/${p.env.sessionId}/cancel`);
    const res = await p.post(`/work/${item.id}/complete`, { lease: item.lease });
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect(await errorType(res, 409)).toBe('lease_lost_error');
    expect((await readWork(t.db, item.id))!.state).toBe('stopped');
  });

  it('frees the live slots, so the next enqueue creates a fresh item', async () => {
    const p = await platformSetup(t.db);
    const old = await p.enqueue('model_turn');
    await p.post(`/sessions/${p.env.sessionId}/cancel`);
    expect(await p.enqueue('model_turn')).not.toBe(old);
  });

  it('a session with nothing in flight, or never seen, stops nothing: 200 stopped:0', async () => {
    const p = await platformSetup(t.db);
    await p.enqueue('web_exec');
    await p.post(`/sessions/${p.env.sessionId}/cancel`);
    for (const session of [p.env.sessionId, 'never-seen']) {
      const res = await p.post(`/sessions/${session}/cancel`, {});
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ stopped: 0 });
    }
  });

  it('a session id outside 1–128 of [A-Za-z0-9_-] is a 400 and stops nothing', async () => {
    const p = await platformSetup(t.db);
    await p.enqueue('model_turn');
    for (const session of ['a.b', 's'.repeat(129), 'a%20b', '%E2%9C%93', "x'--"]) {
      const res = await p.post(`/sessions/${session}/cancel`);
      expect(await errorType(res, 400)).toBe('invalid_request_error');
    }
    expect(await countWork(t.db, 'queued')).toBe(1);
  });

  it('a body other than empty or {} is a 400 and stops nothing', async () => {
    const p = await platformSetup(t.db);
    await p.enqueue('model_turn');
    for (const body of [{ force: true }, '[]', '"now"']) {
      const res = await p.post(`/sessions/${p.env.sessionId}/cancel`, body);
      expect(await errorType(res, 400)).toBe('invalid_request_error');
    }
    expect(await countWork(t.db, 'queued')).toBe(1);
  });
});
