import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { useTestDb } from '../helpers/db.js';
import { asAdmin, WIRE_STAMP } from '../helpers/management.js';

type Issued = { id: string; key: string; name: string; scope: string };

describe('GET /v1/api_keys', () => {
  const t = useTestDb('pg');

  it('lists unrevoked keys newest first with their scope, in one page, with no secret and no hash', async () => {
    const { ok, call, admin } = await asAdmin(t.db);
    const platform = await ok<Issued>(
      'POST',
      '/v1/api_keys',
      { name: 'p', scope: 'platform', expires_in_seconds: 60 },
      201,
    );
    const res = await call('GET', '/v1/api_keys');
    const text = await res.text();
    for (const secret of [admin, platform.key]) expect(text).not.toContain(secret);
    expect(text).not.toMatch(/[0-9a-f]{64}/);
    const body = JSON.parse(text);
    expect(body.next_page).toBeNull();
    expect(body.data).toEqual([
      {
        id: platform.id,
        type: 'api_key',
        name: 'p',
        scope: 'platform',
        created_at: expect.stringMatching(WIRE_STAMP),
        expires_at: expect.stringMatching(WIRE_STAMP),
      },
      {
        id: expect.stringMatching(/^apikey_/),
        type: 'api_key',
        name: 'test admin key',
        scope: 'admin',
        created_at: expect.stringMatching(WIRE_STAMP),
        expires_at: null,
      },
    ]);
  });

  it('omits revoked keys and keeps expired ones', async () => {
    const { ok } = await asAdmin(t.db);
    const revoked = await ok<Issued>('POST', '/v1/api_keys', { name: 'r', scope: 'platform' }, 201);
    const expired = await ok<Issued>('POST', '/v1/api_keys', { name: 'e', scope: 'platform' }, 201);
    await ok('POST', `/v1/api_keys/${revoked.id}/revoke`, undefined, 204);
    await t.db.execute(
      sql`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = ${expired.id}`,
    );
    const names = (await ok<{ data: { name: string }[] }>('GET', '/v1/api_keys')).data.map((k) => k.name);
    expect(names).toEqual(['e', 'test admin key']);
  });
});
