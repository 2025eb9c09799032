import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { useTestDb } from '../helpers/db.js';
import { asAdmin, expectError, UNKNOWN_ENV, WIRE_STAMP } from '../helpers/management.js';

type Issued = { id: string; key: string; name: string; created_at: string; expires_at: string | null };

describe('GET /v1/environments/{id}/keys', () => {
  const t = useTestDb('pg');
  const setup = async () => {
    const admin = await asAdmin(t.db);
    const env = await admin.ok<{ id: string }>('POST', '/v1/environments', {
      name: 'e',
      config: { type: 'self_hosted' },
    });
    const path = `/v1/environments/${env.id}/keys`;
    const issue = (name: string) => admin.ok<Issued>('POST', path, { name, expires_in_seconds: 60 }, 201);
    return { ...admin, path, issue };
  };

  it('lists unrevoked keys newest first, in one page, with no secret and no hash', async () => {
    const { call, path, issue } = await setup();
    const a = await issue('a');
    const b = await issue('b');
    const res = await call('GET', path);
    const text = await res.text();
    expect(res.status).toBe(200);
    for (const secret of [a.key, b.key]) expect(text).not.toContain(secret);
    expect(text).not.toMatch(/[0-9a-f]{64}/);
    expect(JSON.parse(text)).toEqual({
      data: [b, a].map(({ key: _, ...k }) => ({ ...k, type: 'environment_key' })),
      next_page: null,
    });
    expect(JSON.parse(text).data[0]).toEqual({
      id: b.id,
      type: 'environment_key',
      name: 'b',
      created_at: expect.stringMatching(WIRE_STAMP),
      expires_at: expect.stringMatching(WIRE_STAMP),
    });
  });

  it('omits revoked keys and keeps expired ones, so they can be cleaned up', async () => {
    const { ok, path, issue } = await setup();
    const revoked = await issue('revoked');
    const expired = await issue('expired');
    await ok('POST', `${path}/${revoked.id}/revoke`, undefined, 204);
    await t.db.execute(
      sql`UPDATE environment_keys SET expires_at = now() - interval '1 second' WHERE id = ${expired.id}`,
    );
    const listed = await ok<{ data: { id: string }[] }>('GET', path);
    expect(listed.data.map((k) => k.id)).toEqual([expired.id]);
  });

  it("never lists another environment's keys", async () => {
    const { ok, path, issue } = await setup();
    await issue('mine');
    const other = await ok<{ id: string }>('POST', '/v1/environments', {
      name: 'o',
      config: { type: 'self_hosted' },
    });
    expect(await ok('GET', `/v1/environments/${other.id}/keys`)).toEqual({ data: [], next_page: null });
    expect((await ok<{ data: unknown[] }>('GET', path)).data).toHaveLength(1);
  });

  it('answers 404 for an unknown or malformed environment', async () => {
    const { call } = await asAdmin(t.db);
    await expectError(await call('GET', `/v1/environments/${UNKNOWN_ENV}/keys`), 404, 'not_found_error');
    await expectError(await call('GET', '/v1/environments/x/keys'), 404, 'not_found_error');
  });
});
