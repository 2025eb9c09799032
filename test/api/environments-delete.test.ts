import { describe, expect, it } from 'vitest';
import { useTestDb } from '../helpers/db.js';
import { createSession } from '../helpers/factories.js';
import { asAdmin, expectError, UNKNOWN_ENV } from '../helpers/management.js';

describe('DELETE /v1/environments/{id}', () => {
  const t = useTestDb('pg');
  const setup = async () => {
    const admin = await asAdmin(t.db);
    const env = await admin.ok<{ id: string }>('POST', '/v1/environments', {
      name: 'e',
      config: { type: 'self_hosted' },
    });
    return { ...admin, id: env.id, path: `/v1/environments/${env.id}` };
  };

  it('deletes an environment without sessions and answers {id, type: environment_deleted}', async () => {
    const { ok, call, id, path } = await setup();
    expect(await ok('DELETE', path)).toEqual({ id, type: 'environment_deleted' });
    await expectError(await call('GET', path), 404, 'not_found_error');
    await expectError(await call('DELETE', path), 404, 'not_found_error');
  });

  it("takes the environment's keys with it: they stop authenticating", async () => {
    const { ok, api, path } = await setup();
    const { key } = await ok<{ key: string }>('POST', `${path}/keys`, { name: 'worker' }, 201);
    expect((await api.call('GET', `${path}/work/poll`, { key })).status).toBe(200);
    await ok('DELETE', path);
    await expectError(await api.call('GET', `${path}/work/poll`, { key }), 401, 'authentication_error');
  });

  it('refuses an environment that still has sessions, and keeps it', async () => {
    const { call, ok, id, path } = await setup();
    await createSession(t.db, id);
    const body = await expectError(await call('DELETE', path), 400, 'invalid_request_error');
    expect(body.error.details).toEqual({ error_code: 'environment_has_sessions' });
    expect(await ok('GET', path)).toMatchObject({ id });
  });

  it('deletes an archived environment too', async () => {
    const { ok, id, path } = await setup();
    await ok('POST', `${path}/archive`);
    expect(await ok('DELETE', path)).toEqual({ id, type: 'environment_deleted' });
  });

  it('answers 404 for an unknown or malformed id', async () => {
    const { call } = await asAdmin(t.db);
    await expectError(await call('DELETE', `/v1/environments/${UNKNOWN_ENV}`), 404, 'not_found_error');
    await expectError(await call('DELETE', '/v1/environments/nope'), 404, 'not_found_error');
  });
});
