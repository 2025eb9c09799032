import { describe, expect, it } from 'vitest';
import { useTestDb } from '../helpers/db.js';
import { compareTimestamps } from '../helpers/factories.js';
import { asAdmin, expectError, UNKNOWN_ENV } from '../helpers/management.js';

type Env = { id: string; name: string; updated_at: string; [k: string]: unknown };

describe('POST /v1/environments/{id} (update)', () => {
  const t = useTestDb('pg');
  const setup = async (body: Record<string, unknown> = {}) => {
    const admin = await asAdmin(t.db);
    const env = await admin.ok<Env>('POST', '/v1/environments', {
      name: 'before',
      description: 'words',
      metadata: { a: '1', b: '2', c: '3' },
      ...body,
    });
    return { ...admin, env, path: `/v1/environments/${env.id}` };
  };

  it('changes only the named fields and moves updated_at forward', async () => {
    const { ok, env, path } = await setup();
    const updated = await ok<Env>('POST', path, { name: 'after' });
    expect(updated).toEqual({ ...env, name: 'after', updated_at: updated.updated_at });
    expect(await compareTimestamps(t.db, updated.updated_at, env.updated_at)).toBe(1);
    expect(await ok('GET', path)).toEqual(updated);
  });

  it('metadata: a string upserts, null and "" delete, omitted keys stay', async () => {
    const { ok, path } = await setup();
    const updated = await ok<Env>('POST', path, { metadata: { a: null, b: '', d: '4', c: 'three' } });
    expect(updated.metadata).toEqual({ c: 'three', d: '4' });
  });

  it('description: omitted keeps, null clears, "" is stored as ""', async () => {
    const { ok, path } = await setup();
    expect((await ok<Env>('POST', path, { name: 'x' })).description).toBe('words');
    expect((await ok<Env>('POST', path, { description: '' })).description).toBe('');
    expect((await ok<Env>('POST', path, { description: null })).description).toBeNull();
  });

  it('an empty body, or null fields, change nothing but updated_at', async () => {
    const { ok, env, path } = await setup();
    for (const body of [undefined, {}, { name: null, metadata: null, config: null, scope: null }]) {
      const updated = await ok<Env>('POST', path, body);
      expect(updated).toEqual({ ...env, updated_at: updated.updated_at });
    }
  });

  it('a cloud config patch keeps the fields it leaves out', async () => {
    const { ok, path } = await setup({ config: { type: 'cloud', packages: { npm: ['tsx'] } } });
    const updated = await ok<Env>('POST', path, {
      config: { type: 'cloud', networking: { type: 'limited' } },
    });
    expect(updated.config).toMatchObject({ networking: { type: 'limited' }, packages: { npm: ['tsx'] } });
  });

  it('refuses a change of config.type with invalid_config_type_change and writes nothing', async () => {
    const { call, ok, env, path } = await setup();
    const res = await call('POST', path, { name: 'x', config: { type: 'self_hosted' } });
    const body = await expectError(res, 400, 'invalid_request_error');
    expect(body.error.details).toEqual({ error_code: 'invalid_config_type_change' });
    expect(await ok('GET', path)).toEqual(env);
  });

  it('refuses an update that would exceed 16 metadata pairs, counting after deletes', async () => {
    const { call, ok, env, path } = await setup();
    const fourteen = Object.fromEntries(Array.from({ length: 14 }, (_, i) => [`k${i}`, 'v']));
    const body = await expectError(
      await call('POST', path, { metadata: fourteen }),
      400,
      'invalid_request_error',
    );
    expect(body.error.details).toEqual({ error_code: 'invalid_metadata' });
    expect(await ok('GET', path)).toEqual(env);
    const fits = await ok<Env>('POST', path, { metadata: { ...fourteen, a: null } });
    expect(Object.keys(fits.metadata as object)).toHaveLength(16);
  });

  it('refuses an archived environment with environment_archived', async () => {
    const { call, ok, path } = await setup();
    await ok('POST', `${path}/archive`);
    const body = await expectError(await call('POST', path, { name: 'x' }), 400, 'invalid_request_error');
    expect(body.error.details).toEqual({ error_code: 'environment_archived' });
  });

  it.each([
    ['an unknown field', { colour: 'blue' }],
    ["scope 'account'", { scope: 'account' }],
    ['an empty name', { name: '' }],
    ['a metadata value that is not a string or null', { metadata: { a: 1 } }],
    ['not JSON', 'nope'],
  ])('refuses %s with 400', async (_, body) => {
    const { call, ok, env, path } = await setup();
    await expectError(await call('POST', path, body), 400, 'invalid_request_error');
    expect(await ok('GET', path)).toEqual(env);
  });

  it('answers 404 for an unknown or malformed id', async () => {
    const { call } = await asAdmin(t.db);
    await expectError(
      await call('POST', `/v1/environments/${UNKNOWN_ENV}`, { name: 'x' }),
      404,
      'not_found_error',
    );
    await expectError(await call('POST', '/v1/environments/env_nope', { name: 'x' }), 404, 'not_found_error');
  });
});
