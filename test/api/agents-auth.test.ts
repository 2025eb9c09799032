import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { rows } from '../../src/db/handle.js';
import { apiKey, environmentWithKey } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import { asAdmin, expectError } from '../helpers/management.js';

/** Every agent route, with `{agent}` standing for a real agent id. */
const ROUTES = [
  ['POST', '/v1/agents', { name: 'n', model: 'm' }],
  ['GET', '/v1/agents'],
  ['GET', '/v1/agents/{agent}'],
  ['POST', '/v1/agents/{agent}', { name: 'renamed' }],
  ['GET', '/v1/agents/{agent}/versions'],
  ['POST', '/v1/agents/{agent}/archive'],
] as const;

describe('agent routes take admin and platform API keys, nothing else', () => {
  const t = useTestDb('pg');
  const setup = async () => {
    const admin = await asAdmin(t.db);
    const agent = await admin.ok<{ id: string }>('POST', '/v1/agents', { name: 'a', model: 'm' });
    const path = (p: string) => p.replace('{agent}', agent.id);
    const state = () =>
      rows(t.db, sql`SELECT a.*, v.* FROM agents a JOIN agent_versions v ON v.agent_id = a.id`);
    return { ...admin, path, state };
  };

  it.each([
    ['no credentials', async () => ({})],
    ['an unknown key', async () => ({ authorization: `Bearer lh_api_${'x'.repeat(43)}` })],
    [
      'an environment key',
      async (db: typeof t.db) => ({ authorization: `Bearer ${(await environmentWithKey(db)).key}` }),
    ],
  ])('every route answers %s with 401, changing nothing', async (_, headers) => {
    const { api, path, state } = await setup();
    const before = await state();
    for (const [method, route, body] of ROUTES) {
      const res = await api.call(method, path(route), { headers: await headers(t.db), body });
      await expectError(res, 401, 'authentication_error');
    }
    expect(await state()).toEqual(before);
  });

  it('every route serves a platform key, as Bearer or x-api-key, with or without the beta header', async () => {
    const { api, path } = await setup();
    const platform = await apiKey(t.db, 'platform');
    for (const [i, [method, route, body]] of ROUTES.entries()) {
      const headers: Record<string, string> =
        i % 2 ? { 'x-api-key': platform } : { authorization: `Bearer ${platform}` };
      if (i % 3 === 0) headers['anthropic-beta'] = 'managed-agents-2026-04-01';
      const res = await api.call(method, path(route), { headers, body });
      expect(res.status, `${method} ${route}: ${await res.clone().text()}`).toBe(200);
    }
  });

  it('every agent route is in /openapi.json, documented for admin and platform keys', async () => {
    const { api } = await setup();
    const doc = await (await api.call('GET', '/openapi.json')).json();
    for (const [method, route] of ROUTES) {
      const documented = doc.paths[route.replace('{agent}', '{agentId}')]?.[method.toLowerCase()];
      expect(documented?.['x-leasehold-credentials'], `${method} ${route}`).toEqual([
        'admin_api_key',
        'platform_api_key',
      ]);
    }
  });
});
