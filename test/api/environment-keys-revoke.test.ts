import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { maybeRow } from '../../src/db/handle.js';
import { useTestDb } from '../helpers/db.js';
import { asAdmin, expectError, UNKNOWN_ENV } from '../helpers/management.js';

describe('POST /v1/environments/{id}/keys/{key_id}/revoke', () => {
  const t = useTestDb('pg');
  const revokedAt = async (id: string) =>
    (
      await maybeRow<{ at: string }>(
        t.db,
        sql`SELECT revoked_at::text AS at FROM environment_keys WHERE id = ${id}`,
      )
    )?.at;
  const setup = async () => {
    const admin = await asAdmin(t.db);
    const newEnv = async () => {
      const env = await admin.ok<{ id: string }>('POST', '/v1/environments', {
        name: 'e',
        config: { type: 'self_hosted' },
      });
      const path = `/v1/environments/${env.id}`;
      const issued = await admin.ok<{ id: string; key: string }>('POST', `${path}/keys`, { name: 'w' }, 201);
      const poll = () => admin.api.call('GET', `${path}/work/poll`, { key: issued.key });
      return { path, keyId: issued.id, key: issued.key, poll };
    };
    return { ...admin, newEnv };
  };

  it('answers 204 with no body, and the key 401s on its very next poll', async () => {
    const { call, newEnv } = await setup();
    const env = await newEnv();
    expect((await env.poll()).status).toBe(200);
    const res = await call('POST', `${env.path}/keys/${env.keyId}/revoke`);
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
    await expectError(await env.poll(), 401, 'authentication_error');
  });

  it('is idempotent: revoking again answers 204 and keeps the first revocation time', async () => {
    const { call, newEnv } = await setup();
    const env = await newEnv();
    const revoke = () => call('POST', `${env.path}/keys/${env.keyId}/revoke`);
    expect((await revoke()).status).toBe(204);
    const before = await revokedAt(env.keyId);
    expect((await revoke()).status).toBe(204);
    const after = await revokedAt(env.keyId);
    expect(before).toEqual(expect.any(String));
    expect(after).toBe(before);
  });

  it("answers 404 for another environment's key, which keeps working", async () => {
    const { call, newEnv } = await setup();
    const mine = await newEnv();
    const theirs = await newEnv();
    await expectError(await call('POST', `${mine.path}/keys/${theirs.keyId}/revoke`), 404, 'not_found_error');
    expect((await theirs.poll()).status).toBe(200);
  });

  it('answers 404 for an unknown or malformed key id, or an unknown environment', async () => {
    const { call, newEnv } = await setup();
    const env = await newEnv();
    for (const keyId of ['envkey_0000000000000000000000zz', 'apikey_0000000000000000000000zz', 'nope']) {
      await expectError(await call('POST', `${env.path}/keys/${keyId}/revoke`), 404, 'not_found_error');
    }
    await expectError(
      await call('POST', `/v1/environments/${UNKNOWN_ENV}/keys/${env.keyId}/revoke`),
      404,
      'not_found_error',
    );
    expect((await env.poll()).status).toBe(200);
  });

  it('an expired key is refused with exactly the answer an unknown key gets', async () => {
    const { api, newEnv } = await setup();
    const env = await newEnv();
    await t.db.execute(
      sql`UPDATE environment_keys SET expires_at = now() - interval '1 millisecond' WHERE id = ${env.keyId}`,
    );
    const expired = await expectError(await env.poll(), 401, 'authentication_error');
    const unknown = await expectError(
      await api.call('GET', `${env.path}/work/poll`, { key: `lh_env_${'A'.repeat(43)}` }),
      401,
      'authentication_error',
    );
    expect(expired.error).toEqual(unknown.error);
  });
});
