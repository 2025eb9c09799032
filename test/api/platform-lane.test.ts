import { describe, expect, it } from 'vitest';
import { newId } from '../../src/ids.js';
import { apiKey } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import { countWork } from '../helpers/factories.js';
import { errorType, PLATFORM, platformSetup } from '../helpers/platform.js';

/** Every platform endpoint, with a body that would pass validation. */
function endpoints(environmentId: string, sessionId: string): [string, unknown][] {
  const id = newId('work');
  const lease = '2026-01-01T00:00:00Z';
  return [
    ['/work', { environment_id: environmentId, session_id: sessionId, kind: 'model_turn' }],
    ['/work/claim', { kind: 'model_turn', ttl_seconds: 30 }],
    [`/work/${id}/extend`, { lease, ttl_seconds: 30 }],
    [`/work/${id}/complete`, { lease }],
    [`/work/${id}/complete_and_claim`, { lease, kind: 'model_turn', ttl_seconds: 30 }],
    [`/work/${id}/requeue`, { lease }],
    [`/sessions/${sessionId}/cancel`, undefined],
  ];
}

describe('the platform lane', () => {
  const t = useTestDb('pg');

  it('refuses environment keys, missing and unknown credentials with 401 on every endpoint, before doing anything', async () => {
    const p = await platformSetup(t.db);
    for (const [path, body] of endpoints(p.env.environmentId, p.env.sessionId)) {
      for (const key of [p.env.key, null, 'sk-not-a-key']) {
        const res = await p.api.call('POST', `${PLATFORM}${path}`, { key, body });
        expect(await errorType(res, 401)).toBe('authentication_error');
      }
    }
    expect(await countWork(t.db)).toBe(0);
  });

  it('accepts admin API keys as well as platform keys, by Bearer or x-api-key', async () => {
    const p = await platformSetup(t.db);
    const admin = await apiKey(t.db, 'admin');
    const body = { environment_id: p.env.environmentId, session_id: p.env.sessionId, kind: 'web_exec' };
    expect((await p.api.call('POST', `${PLATFORM}/work`, { key: admin, body })).status).toBe(201);
    const claim = await p.api.call('POST', `${PLATFORM}/work/claim`, {
      headers: { 'x-api-key': p.key },
      body: { kind: 'web_exec', ttl_seconds: 30 },
    });
    expect(claim.status).toBe(200);
    expect(await claim.json()).not.toBeNull();
  });

  it('a wrong method on a platform path is a 405 and an unknown path a 404, both only after authentication', async () => {
    const p = await platformSetup(t.db);
    const id = newId('work');
    for (const [method, path] of [
      ['GET', '/work'],
      ['GET', '/work/claim'],
      ['DELETE', `/work/${id}/complete`],
      ['GET', `/work/${id}/complete_and_claim`],
      ['PUT', `/sessions/${p.env.sessionId}/cancel`],
    ] as const) {
      expect(await errorType(await p.api.call(method, `${PLATFORM}${path}`, { key: p.key }), 405)).toBe(
        'invalid_request_error',
      );
      expect((await p.api.call(method, `${PLATFORM}${path}`)).status).toBe(401);
    }
    for (const path of ['/work/claim/all', `/work/${id}`, `/work/${id}/stop`, '/sessions']) {
      expect(await errorType(await p.post(path, {}), 404)).toBe('not_found_error');
      expect((await p.api.call('POST', `${PLATFORM}${path}`, { key: p.env.key })).status).toBe(401);
    }
  });

  it('documents every platform endpoint in the OpenAPI document, for platform and admin keys', async () => {
    const p = await platformSetup(t.db);
    const doc = (await (await p.api.call('GET', '/openapi.json')).json()) as {
      paths: Record<string, Record<string, { 'x-leasehold-credentials': string[]; requestBody?: unknown }>>;
    };
    for (const path of [
      '/v1/platform/work',
      '/v1/platform/work/claim',
      '/v1/platform/work/{workId}/extend',
      '/v1/platform/work/{workId}/complete',
      '/v1/platform/work/{workId}/complete_and_claim',
      '/v1/platform/work/{workId}/requeue',
      '/v1/platform/sessions/{sessionId}/cancel',
    ]) {
      const op = doc.paths[path]?.post;
      expect(op, path).toBeDefined();
      expect(op!['x-leasehold-credentials'].sort()).toEqual(['admin_api_key', 'platform_api_key']);
      // Cancel takes no options, so it documents no body.
      expect(op!.requestBody !== undefined, path).toBe(!path.endsWith('/cancel'));
    }
  });
});
