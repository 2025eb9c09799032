import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { hashSecret } from '../../src/auth/secrets.js';
import { maybeRow, rows } from '../../src/db/handle.js';
import { useTestDb } from '../helpers/db.js';
import { asAdmin, expectError, UNKNOWN_ENV, WIRE_STAMP } from '../helpers/management.js';

type Issued = { id: string; key: string; created_at: string; expires_at: string | null };

describe('POST /v1/environments/{id}/keys', () => {
  const t = useTestDb('pg');
  const setup = async (config: { type: string } = { type: 'self_hosted' }) => {
    const admin = await asAdmin(t.db);
    const env = await admin.ok<{ id: string }>('POST', '/v1/environments', { name: 'e', config });
    return { ...admin, id: env.id, path: `/v1/environments/${env.id}` };
  };

  it('answers 201 with the secret, sent no-store, in exactly the documented shape', async () => {
    const { call, path } = await setup();
    const res = await call('POST', `${path}/keys`, { name: '  worker 1  ' });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.json()).toEqual({
      id: expect.stringMatching(/^envkey_[0-9a-z]{24}$/),
      type: 'environment_key',
      key: expect.stringMatching(/^lh_env_[A-Za-z0-9_-]{43}$/),
      name: 'worker 1',
      created_at: expect.stringMatching(WIRE_STAMP),
      expires_at: null,
    });
  });

  it("the key authenticates its environment's work API and no other environment's", async () => {
    const { ok, api, path } = await setup();
    const other = await ok<{ id: string }>('POST', '/v1/environments', {
      name: 'o',
      config: { type: 'self_hosted' },
    });
    const { key } = await ok<Issued>('POST', `${path}/keys`, { name: 'w' }, 201);
    expect((await api.call('GET', `${path}/work/poll`, { key })).status).toBe(200);
    await expectError(
      await api.call('GET', `/v1/environments/${other.id}/work/poll`, { key }),
      401,
      'authentication_error',
    );
  });

  it('stores only the 64-hex SHA-256 of the secret, never the secret itself', async () => {
    const { ok, path } = await setup();
    const issued = await ok<Issued>('POST', `${path}/keys`, { name: 'w' }, 201);
    const stored = await rows<{ row: string; key_hash: string }>(
      t.db,
      sql`SELECT row_to_json(k)::text AS row, key_hash FROM environment_keys k`,
    );
    expect(stored).toHaveLength(1);
    expect(stored[0]!.key_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(stored[0]!.key_hash).toBe(await hashSecret(issued.key));
    expect(stored[0]!.row).not.toContain(issued.key.slice('lh_env_'.length));
  });

  it('expires_in_seconds sets expires_at that many seconds after created_at, by the database clock', async () => {
    const { ok, path } = await setup();
    const issued = await ok<Issued>('POST', `${path}/keys`, { name: 'w', expires_in_seconds: 3600 }, 201);
    expect(issued.expires_at).toMatch(WIRE_STAMP);
    const gap = await maybeRow<{ s: number }>(
      t.db,
      sql`SELECT extract(epoch FROM ${issued.expires_at}::timestamptz - ${issued.created_at}::timestamptz)::float8 AS s`,
    );
    expect(gap?.s).toBe(3600);
    expect(
      (await ok<Issued>('POST', `${path}/keys`, { name: 'w', expires_in_seconds: null }, 201)).expires_at,
    ).toBeNull();
  });

  it.each([
    ['no body', undefined],
    ['no name', {}],
    ['a blank name', { name: '   ' }],
    ['a name over 128 characters after trimming', { name: ` ${'n'.repeat(129)} ` }],
    ['zero seconds', { name: 'w', expires_in_seconds: 0 }],
    ['negative seconds', { name: 'w', expires_in_seconds: -5 }],
    ['fractional seconds', { name: 'w', expires_in_seconds: 1.5 }],
    ['seconds as a string', { name: 'w', expires_in_seconds: '60' }],
    ['more than ten years', { name: 'w', expires_in_seconds: 10 * 365 * 86400 + 1 }],
    ['an unknown field', { name: 'w', scope: 'admin' }],
  ])('refuses %s with 400 and issues nothing', async (_, body) => {
    const { call, ok, path } = await setup();
    await expectError(await call('POST', `${path}/keys`, body), 400, 'invalid_request_error');
    expect(await ok('GET', `${path}/keys`)).toEqual({ data: [], next_page: null });
  });

  it('refuses a cloud environment: it has no workers to key', async () => {
    const { call, path } = await setup({ type: 'cloud' });
    await expectError(await call('POST', `${path}/keys`, { name: 'w' }), 400, 'invalid_request_error');
  });

  it('refuses an archived environment with environment_archived', async () => {
    const { call, ok, path } = await setup();
    await ok('POST', `${path}/archive`);
    const body = await expectError(
      await call('POST', `${path}/keys`, { name: 'w' }),
      400,
      'invalid_request_error',
    );
    expect(body.error.details).toEqual({ error_code: 'environment_archived' });
  });

  it('answers 404 for an unknown or malformed environment', async () => {
    const { call } = await asAdmin(t.db);
    await expectError(
      await call('POST', `/v1/environments/${UNKNOWN_ENV}/keys`, { name: 'w' }),
      404,
      'not_found_error',
    );
    await expectError(
      await call('POST', '/v1/environments/env_x/keys', { name: 'w' }),
      404,
      'not_found_error',
    );
  });
});
