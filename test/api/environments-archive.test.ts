import { describe, expect, it } from 'vitest';
import { useTestDb } from '../helpers/db.js';
import { createSession, wireWork } from '../helpers/factories.js';
import { asAdmin, expectError, UNKNOWN_ENV, WIRE_STAMP } from '../helpers/management.js';

type Env = { id: string; archived_at: string | null; updated_at: string };

describe('POST /v1/environments/{id}/archive', () => {
  const t = useTestDb('pg');
  const setup = async () => {
    const admin = await asAdmin(t.db);
    const env = await admin.ok<Env>('POST', '/v1/environments', {
      name: 'e',
      config: { type: 'self_hosted' },
    });
    return { ...admin, env, path: `/v1/environments/${env.id}` };
  };

  it('sets archived_at and answers the environment', async () => {
    const { ok, env, path } = await setup();
    const archived = await ok<Env>('POST', `${path}/archive`);
    expect(archived).toEqual({
      ...env,
      archived_at: expect.stringMatching(WIRE_STAMP),
      updated_at: archived.archived_at,
    });
  });

  it('is idempotent: archiving again changes nothing', async () => {
    const { ok, path } = await setup();
    const first = await ok('POST', `${path}/archive`);
    expect(await ok('POST', `${path}/archive`)).toEqual(first);
  });

  it('ignores a body, since the SDK sends none', async () => {
    const { ok, path } = await setup();
    expect((await ok<Env>('POST', `${path}/archive`, { anything: true })).archived_at).toMatch(WIRE_STAMP);
  });

  it("leaves the work API serving: the environment's existing keys still poll work", async () => {
    const { ok, api, env, path } = await setup();
    const { key } = await ok<{ key: string }>('POST', `${path}/keys`, { name: 'worker' }, 201);
    const sessionId = await createSession(t.db, env.id);
    const work = await wireWork(t.db, { environmentId: env.id, sessionId }, 'queued');
    await ok('POST', `${path}/archive`);
    const res = await api.call('GET', `${path}/work/poll`, { key });
    expect(res.status).toBe(200);
    expect((await res.json()).id).toBe(work.id);
  });

  it('answers 404 for an unknown or malformed id', async () => {
    const { call } = await asAdmin(t.db);
    await expectError(await call('POST', `/v1/environments/${UNKNOWN_ENV}/archive`), 404, 'not_found_error');
    await expectError(await call('POST', '/v1/environments/env_/archive'), 404, 'not_found_error');
  });
});
