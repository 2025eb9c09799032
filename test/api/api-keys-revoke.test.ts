import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { useTestDb } from '../helpers/db.js';
import { asAdmin, expectError } from '../helpers/management.js';

type Issued = { id: string; key: string };

describe('POST /v1/api_keys/{id}/revoke', () => {
  const t = useTestDb('pg');

  it('answers 204 with no body, and the key 401s on its very next request', async () => {
    const { ok, call, api } = await asAdmin(t.db);
    const other = await ok<Issued>('POST', '/v1/api_keys', { name: 'o', scope: 'admin' }, 201);
    expect((await api.call('GET', '/v1/api_keys', { key: other.key })).status).toBe(200);
    const res = await call('POST', `/v1/api_keys/${other.id}/revoke`);
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
    await expectError(await api.call('GET', '/v1/api_keys', { key: other.key }), 401, 'authentication_error');
  });

  it('is idempotent: revoking again answers 204', async () => {
    const { ok, call } = await asAdmin(t.db);
    const other = await ok<Issued>('POST', '/v1/api_keys', { name: 'o', scope: 'platform' }, 201);
    expect((await call('POST', `/v1/api_keys/${other.id}/revoke`)).status).toBe(204);
    expect((await call('POST', `/v1/api_keys/${other.id}/revoke`)).status).toBe(204);
  });

  it('an admin can revoke its own key, which then stops working', async () => {
    const { ok, call } = await asAdmin(t.db);
    const keys = await ok<{ data: { id: string }[] }>('GET', '/v1/api_keys');
    expect((await call('POST', `/v1/api_keys/${keys.data[0]!.id}/revoke`)).status).toBe(204);
    await expectError(await call('GET', '/v1/api_keys'), 401, 'authentication_error');
  });

  it('answers 404 for an unknown or malformed id, and revokes nothing', async () => {
    const { call, ok } = await asAdmin(t.db);
    for (const id of ['apikey_0000000000000000000000zz', 'envkey_0000000000000000000000zz', 'nope']) {
      await expectError(await call('POST', `/v1/api_keys/${id}/revoke`), 404, 'not_found_error');
    }
    expect((await ok<{ data: unknown[] }>('GET', '/v1/api_keys')).data).toHaveLength(1);
  });

  it('an expired admin key is refused with exactly the answer an unknown key gets', async () => {
    const { ok, api } = await asAdmin(t.db);
    const other = await ok<Issued>('POST', '/v1/api_keys', { name: 'o', scope: 'admin' }, 201);
    await t.db.execute(
      sql`UPDATE api_keys SET expires_at = now() - interval '1 millisecond' WHERE id = ${other.id}`,
    );
    const expired = await expectError(
      await api.call('GET', '/v1/api_keys', { key: other.key }),
      401,
      'authentication_error',
    );
    const unknown = await expectError(
      await api.call('GET', '/v1/api_keys', { key: `lh_api_${'A'.repeat(43)}` }),
      401,
      'authentication_error',
    );
    expect(expired.error).toEqual(unknown.error);
  });
});
