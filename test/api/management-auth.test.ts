import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { issueApiKey } from '../../src/auth/credentials.js';
import { apiKey, environmentWithKey } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import { asAdmin, expectError } from '../helpers/management.js';

/** Every management route, with `{env}`, `{envkey}` and `{apikey}` standing for real ids. */
const ROUTES = [
  ['POST', '/v1/environments', { name: 'n' }],
  ['GET', '/v1/environments'],
  ['GET', '/v1/environments/{env}'],
  ['POST', '/v1/environments/{env}', { name: 'n' }],
  ['DELETE', '/v1/environments/{env}'],
  ['POST', '/v1/environments/{env}/archive'],
  ['POST', '/v1/environments/{env}/keys', { name: 'n' }],
  ['GET', '/v1/environments/{env}/keys'],
  ['POST', '/v1/environments/{env}/keys/{envkey}/revoke'],
  ['POST', '/v1/api_keys', { name: 'n', scope: 'admin' }],
  ['GET', '/v1/api_keys'],
  ['POST', '/v1/api_keys/{apikey}/revoke'],
] as const;

type Headers = Record<string, string>;
const CALLERS: [
  string,
  (s: { envKey: string; platform: string; revoked: string; expired: string }) => Headers,
][] = [
  ['no credentials', () => ({})],
  ['an empty Bearer token', () => ({ authorization: 'Bearer ' })],
  ['a Basic authorization', () => ({ authorization: 'Basic YWRtaW46YWRtaW4=' })],
  ['an unknown Bearer key', () => ({ authorization: `Bearer lh_api_${'x'.repeat(43)}` })],
  ['an unknown x-api-key', () => ({ 'x-api-key': 'nonsense' })],
  ['an environment key', (s) => ({ authorization: `Bearer ${s.envKey}` })],
  ['a platform API key', (s) => ({ authorization: `Bearer ${s.platform}` })],
  ['a platform API key as x-api-key', (s) => ({ 'x-api-key': s.platform })],
  ['a revoked admin key', (s) => ({ authorization: `Bearer ${s.revoked}` })],
  ['an expired admin key', (s) => ({ authorization: `Bearer ${s.expired}` })],
];

describe('management routes accept admin API keys only', () => {
  const t = useTestDb('pg');

  const setup = async () => {
    const admin = await asAdmin(t.db);
    const env = await environmentWithKey(t.db);
    const platform = await apiKey(t.db, 'platform');
    const revoked = await issueApiKey(t.db, 'revoked', 'admin', null);
    const expired = await issueApiKey(t.db, 'expired', 'admin', null);
    await t.db.execute(sql`UPDATE api_keys SET revoked_at = now() WHERE id = ${revoked.id}`);
    await t.db.execute(
      sql`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = ${expired.id}`,
    );
    const path = (p: string) =>
      p.replace('{env}', env.environmentId).replace('{envkey}', env.keyId).replace('{apikey}', revoked.id);
    return {
      ...admin,
      path,
      secrets: { envKey: env.key, platform, revoked: revoked.key, expired: expired.key },
    };
  };

  it.each(CALLERS)(
    'every route answers %s with 401 in the error envelope, changing nothing',
    async (_, headers) => {
      const { api, path, secrets, ok } = await setup();
      const before = await ok('GET', '/v1/environments?include_archived=true');
      for (const [method, route, body] of ROUTES) {
        const res = await api.call(method, path(route), { headers: headers(secrets), body });
        const error = JSON.stringify(await expectError(res, 401, 'authentication_error'));
        for (const secret of Object.values(secrets))
          expect(error, `${method} ${route}`).not.toContain(secret);
      }
      expect(await ok('GET', '/v1/environments?include_archived=true')).toEqual(before);
    },
  );

  it('unknown, revoked and expired keys get the very same answer', async () => {
    const { api, secrets } = await setup();
    const messages = [`lh_api_${'x'.repeat(43)}`, secrets.revoked, secrets.expired].map(async (key) => {
      const res = await api.call('GET', '/v1/environments', { key });
      return (await expectError(res, 401, 'authentication_error')).error;
    });
    const [unknown, ...rest] = await Promise.all(messages);
    for (const other of rest) expect(other).toEqual(unknown);
  });

  it('an admin key is accepted as Bearer and as x-api-key', async () => {
    const { api, admin } = await setup();
    expect((await api.call('GET', '/v1/api_keys', { key: admin })).status).toBe(200);
    expect((await api.call('GET', '/v1/api_keys', { headers: { 'x-api-key': admin } })).status).toBe(200);
  });

  it('every management route is in /openapi.json, documented as admin-only', async () => {
    const { api } = await setup();
    const doc = await (await api.call('GET', '/openapi.json')).json();
    for (const [method, route] of ROUTES) {
      const documented =
        doc.paths[route.replace('{env}', '{environmentId}').replace(/\{(envkey|apikey)\}/, '{keyId}')];
      expect(documented?.[method.toLowerCase()]?.['x-leasehold-credentials'], `${method} ${route}`).toEqual([
        'admin_api_key',
      ]);
    }
  });
});
