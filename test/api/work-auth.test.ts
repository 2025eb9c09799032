import { describe, expect, it } from 'vitest';
import { issueEnvironmentKey, revokeEnvironmentKey } from '../../src/auth/credentials.js';
import { enqueue } from '../../src/queue/index.js';
import { apiKey, environmentWithKey, testApi } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';

describe('work API credentials and routing', () => {
  const t = useTestDb('pg');

  it('poll without a usable environment key is a 401 with the envelope and a request-id', async () => {
    const e = await environmentWithKey(t.db);
    const other = await environmentWithKey(t.db);
    const admin = await apiKey(t.db);
    const path = `/v1/environments/${e.environmentId}/work/poll`;
    const api = testApi(t.db);
    const cases: [string, Record<string, string>][] = [
      ['none', {}],
      ['x-api-key only', { 'x-api-key': admin }],
      ['unknown bearer', { authorization: 'Bearer nope' }],
      ['empty bearer', { authorization: 'Bearer ' }],
      ['basic', { authorization: 'Basic abc' }],
      ['another environment', { authorization: `Bearer ${other.key}` }],
      ['admin API key', { authorization: `Bearer ${admin}` }],
    ];
    for (const [name, headers] of cases) {
      const res = await api.call('GET', path, { headers });
      expect(res.status, name).toBe(401);
      expect(res.headers.get('request-id'), name).toMatch(/^req_/);
      expect(await res.json(), name).toMatchObject({
        type: 'error',
        error: { type: 'authentication_error' },
      });
    }
  });

  it('revoking one of two keys locks out only that key', async () => {
    const e = await environmentWithKey(t.db);
    const second = await issueEnvironmentKey(t.db, e.environmentId, 'second', null);
    const poll = (key: string) =>
      testApi(t.db).call('GET', `/v1/environments/${e.environmentId}/work/poll`, { key });
    expect((await poll(e.key)).status).toBe(200);
    expect((await poll(second.key)).status).toBe(200);
    await revokeEnvironmentKey(t.db, e.environmentId, e.keyId);
    expect((await poll(e.key)).status).toBe(401);
    expect((await poll(second.key)).status).toBe(200);
  });

  it('another environment’s live key gets 401 on every work endpoint of this one', async () => {
    const e = await environmentWithKey(t.db);
    const other = await environmentWithKey(t.db);
    const { work } = await enqueue(t.db, { ...e, kind: 'tool_exec' });
    const base = `/v1/environments/${e.environmentId}/work`;
    for (const [method, path] of [
      ['GET', `${base}/poll`],
      ['GET', base],
      ['GET', `${base}/stats`],
      ['POST', `${base}/${work.id}/ack`],
      ['POST', `${base}/${work.id}/heartbeat?expected_last_heartbeat=NO_HEARTBEAT`],
      ['POST', `${base}/${work.id}/stop`],
    ] as const) {
      expect((await testApi(t.db).call(method, path, { key: other.key })).status, `${method} ${path}`).toBe(
        401,
      );
    }
  });

  it('wrong methods on known paths are 405s and unknown paths 404s, both only after authentication', async () => {
    const e = await environmentWithKey(t.db);
    const base = `/v1/environments/${e.environmentId}/work`;
    const id = 'work_0123456789abcdefghjkmnpq';
    for (const [method, path] of [
      ['POST', base],
      ['DELETE', `${base}/${id}`],
      ['GET', `${base}/${id}/ack`],
      ['GET', `${base}/${id}/heartbeat`],
      ['GET', `${base}/${id}/stop`],
      ['PUT', `${base}/poll`],
    ] as const) {
      expect((await testApi(t.db).call(method, path, { key: e.key })).status, `${method} ${path}`).toBe(405);
      expect((await testApi(t.db).call(method, path)).status, `anonymous ${method} ${path}`).toBe(401);
    }
    const unknown = await testApi(t.db).call('GET', `${base}/${id}/bogus`, { key: e.key });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { type: 'not_found_error' } });
  });

  it('retrieve and update take API keys only; list takes the environment key only', async () => {
    const e = await environmentWithKey(t.db);
    const { work } = await enqueue(t.db, { ...e, kind: 'tool_exec' });
    const admin = await apiKey(t.db);
    const base = `/v1/environments/${e.environmentId}/work`;
    const api = testApi(t.db);
    expect((await api.call('GET', `${base}/${work.id}`, { key: e.key })).status).toBe(401);
    expect(
      (await api.call('POST', `${base}/${work.id}`, { key: e.key, body: { metadata: {} } })).status,
    ).toBe(401);
    expect((await api.call('GET', base, { key: admin })).status).toBe(401);
    expect((await api.call('GET', `${base}/${work.id}`, { key: admin })).status).toBe(200);
    expect((await api.call('GET', base, { key: e.key })).status).toBe(200);
  });

  it('an unauthenticated request is a 401, never a redirect', async () => {
    const res = await testApi(t.db).call('GET', '/v1/environments/env_x/work');
    expect(res.status).toBe(401);
    expect(res.headers.get('location')).toBeNull();
  });
});
