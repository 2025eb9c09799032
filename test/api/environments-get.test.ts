import { describe, expect, it } from 'vitest';
import { useTestDb } from '../helpers/db.js';
import { asAdmin, expectError, UNKNOWN_ENV } from '../helpers/management.js';

describe('GET /v1/environments/{id}', () => {
  const t = useTestDb('pg');

  it('answers the environment exactly as create did', async () => {
    const { ok } = await asAdmin(t.db);
    const created = await ok<{ id: string }>('POST', '/v1/environments', { name: 'e', metadata: { a: 'b' } });
    expect(await ok('GET', `/v1/environments/${created.id}`)).toEqual(created);
  });

  it('still answers an archived environment, with its archived_at', async () => {
    const { ok } = await asAdmin(t.db);
    const { id } = await ok<{ id: string }>('POST', '/v1/environments', { name: 'e' });
    const archived = await ok('POST', `/v1/environments/${id}/archive`);
    expect(await ok('GET', `/v1/environments/${id}`)).toEqual(archived);
  });

  it.each([
    ['an unknown id', UNKNOWN_ENV],
    ['a work id', 'work_0000000000000000000000zz'],
    ['an uppercase id', 'ENV_0000000000000000000000ZZ'],
    ['a too-short id', 'env_123'],
    ['an id with a forbidden letter', 'env_000000000000000000000000u'],
    ['garbage', "x'; DROP TABLE environments; --"],
  ])('answers 404 not_found_error for %s', async (_, id) => {
    const { call } = await asAdmin(t.db);
    const body = await expectError(
      await call('GET', `/v1/environments/${encodeURIComponent(id)}`),
      404,
      'not_found_error',
    );
    expect(body.error.message).toBe('environment not found');
  });
});
