import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { hashSecret } from '../../src/auth/secrets.js';
import { maybeRow, rows } from '../../src/db/handle.js';
import { useTestDb } from '../helpers/db.js';
import { asAdmin, expectError, WIRE_STAMP } from '../helpers/management.js';

type Issued = { id: string; key: string; scope: string; created_at: string; expires_at: string | null };

describe('POST /v1/api_keys', () => {
  const t = useTestDb('pg');

  it.each(['admin', 'platform'] as const)(
    'issues a %s key: 201, no-store, the secret in exactly the documented shape',
    async (scope) => {
      const { call } = await asAdmin(t.db);
      const res = await call('POST', '/v1/api_keys', { name: ' ops ', scope });
      expect(res.status).toBe(201);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(await res.json()).toEqual({
        id: expect.stringMatching(/^apikey_[0-9a-z]{24}$/),
        type: 'api_key',
        key: expect.stringMatching(/^lh_api_[A-Za-z0-9_-]{43}$/),
        name: 'ops',
        scope,
        created_at: expect.stringMatching(WIRE_STAMP),
        expires_at: null,
      });
    },
  );

  it('a new admin key manages; a new platform key is refused by management routes', async () => {
    const { ok, api } = await asAdmin(t.db);
    const admin = await ok<Issued>('POST', '/v1/api_keys', { name: 'a', scope: 'admin' }, 201);
    const platform = await ok<Issued>('POST', '/v1/api_keys', { name: 'p', scope: 'platform' }, 201);
    expect((await api.call('GET', '/v1/environments', { key: admin.key })).status).toBe(200);
    await expectError(
      await api.call('GET', '/v1/environments', { key: platform.key }),
      401,
      'authentication_error',
    );
  });

  it('stores only the 64-hex SHA-256 of the secret, never the secret itself', async () => {
    const { ok } = await asAdmin(t.db);
    const issued = await ok<Issued>('POST', '/v1/api_keys', { name: 'a', scope: 'platform' }, 201);
    const stored = await rows<{ row: string; key_hash: string }>(
      t.db,
      sql`SELECT row_to_json(k)::text AS row, key_hash FROM api_keys k WHERE id = ${issued.id}`,
    );
    expect(stored[0]!.key_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(stored[0]!.key_hash).toBe(await hashSecret(issued.key));
    const everything = await rows<{ row: string }>(
      t.db,
      sql`SELECT row_to_json(k)::text AS row FROM api_keys k`,
    );
    for (const { row } of everything) expect(row).not.toContain(issued.key.slice('lh_api_'.length));
  });

  it('expires_in_seconds sets expires_at that many seconds after created_at', async () => {
    const { ok } = await asAdmin(t.db);
    const issued = await ok<Issued>(
      'POST',
      '/v1/api_keys',
      { name: 'a', scope: 'admin', expires_in_seconds: 90 },
      201,
    );
    const gap = await maybeRow<{ s: number }>(
      t.db,
      sql`SELECT extract(epoch FROM ${issued.expires_at}::timestamptz - ${issued.created_at}::timestamptz)::float8 AS s`,
    );
    expect(gap?.s).toBe(90);
  });

  it.each([
    ['no body', undefined],
    ['no scope', { name: 'a' }],
    ['an unknown scope', { name: 'a', scope: 'root' }],
    ['no name', { scope: 'admin' }],
    ['a blank name', { name: ' ', scope: 'admin' }],
    ['zero seconds', { name: 'a', scope: 'admin', expires_in_seconds: 0 }],
    ['an unknown field', { name: 'a', scope: 'admin', environment_id: 'env_x' }],
    ['not JSON', '{'],
  ])('refuses %s with 400 and issues nothing', async (_, body) => {
    const { call, ok } = await asAdmin(t.db);
    await expectError(await call('POST', '/v1/api_keys', body), 400, 'invalid_request_error');
    expect((await ok<{ data: unknown[] }>('GET', '/v1/api_keys')).data).toHaveLength(1);
  });
});
