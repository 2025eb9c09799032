import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { issueApiKey, revokeApiKey } from '../../src/auth/credentials.js';
import { maybeRow } from '../../src/db/handle.js';
import { newId } from '../../src/ids.js';
import { apiKey, environmentWithKey, testApi } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import { countWork, createEnvironment } from '../helpers/factories.js';
import { errorType, PLATFORM } from '../helpers/platform.js';

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

interface Asked {
  created: boolean;
  work: { id: string; environment_id: string; data: { type: string; id: string }; state: string };
}

describe('POST /v1/platform/environments/{environment_id}/healthchecks', () => {
  const t = useTestDb('pg');
  const healthchecks = (environmentId: string) => `${PLATFORM}/environments/${environmentId}/healthchecks`;

  async function setup(kind: 'self_hosted' | 'cloud' = 'self_hosted') {
    const api = testApi(t.db);
    const env = await environmentWithKey(t.db, kind);
    const platform = await apiKey(t.db, 'platform');
    const admin = await apiKey(t.db, 'admin');
    const ask = (
      key: string,
      environmentId = env.environmentId,
      body?: unknown,
      headers?: Record<string, string>,
    ) => api.call('POST', healthchecks(environmentId), { key, body, headers });
    return { api, env, platform, admin, ask };
  }

  async function sessionsAndItems() {
    const row = await maybeRow<{ sessions: number; items: number }>(
      t.db,
      sql`SELECT (SELECT count(*)::int FROM sessions) AS sessions, (SELECT count(*)::int FROM work_items) AS items`,
    );
    return row!;
  }

  it('a platform key queues one: 201 with the wire work item, data {type: healthcheck, id: hc_…}, bound to no session', async () => {
    const { env, platform, ask } = await setup();
    const before = await sessionsAndItems();
    const res = await ask(platform);
    expect(res.status).toBe(201);
    const body = (await res.json()) as Asked & { work: Record<string, unknown> };
    expect(body).toEqual({
      created: true,
      work: {
        type: 'work',
        id: expect.stringMatching(/^work_[0-9a-z]{24}$/),
        environment_id: env.environmentId,
        created_at: expect.stringMatching(/Z$/),
        data: { type: 'healthcheck', id: expect.stringMatching(/^hc_[0-9a-z]{24}$/) },
        state: 'queued',
        metadata: {},
        acknowledged_at: null,
        latest_heartbeat_at: null,
        started_at: null,
        stop_requested_at: null,
        stopped_at: null,
        secret: null,
      },
    });
    expect(await sessionsAndItems()).toEqual({ sessions: before.sessions, items: before.items + 1 });
    const row = await maybeRow<{ session_id: string | null; healthcheck_id: string; lane: string }>(
      t.db,
      sql`SELECT session_id, healthcheck_id, lane FROM work_items WHERE id = ${body.work.id}`,
    );
    expect(row).toEqual({ session_id: null, healthcheck_id: body.work.data.id, lane: 'poll' });
  });

  it('an admin key may ask too; while the healthcheck is live, asking again answers 200 created:false with it', async () => {
    const { platform, admin, ask } = await setup();
    const first = (await (await ask(admin)).json()) as Asked;
    const again = await ask(platform);
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ ...first, created: false });
    expect(await countWork(t.db)).toBe(1);
  });

  it('the environment’s worker polls it, sees data.type healthcheck, acks and force-stops it; then a new one can be asked for', async () => {
    const { api, env, platform, ask } = await setup();
    const asked = (await (await ask(platform)).json()) as Asked;
    const work = `/v1/environments/${env.environmentId}/work`;
    const worker = (method: string, path: string, body?: unknown) =>
      api.call(method, `${work}${path}`, { key: env.key, body });

    const polled = await worker('GET', '/poll');
    expect(await polled.json()).toMatchObject({ id: asked.work.id, data: asked.work.data, state: 'queued' });
    expect(await (await worker('POST', `/${asked.work.id}/ack`)).json()).toMatchObject({ state: 'starting' });
    const stopped = await worker('POST', `/${asked.work.id}/stop`, { force: true });
    expect(await stopped.json()).toMatchObject({
      id: asked.work.id,
      data: asked.work.data,
      state: 'stopped',
      acknowledged_at: expect.any(String),
      stopped_at: expect.any(String),
    });
    const listed = (await (await worker('GET', '')).json()) as { data: Asked['work'][] };
    expect(listed.data.map((w) => [w.id, w.data])).toEqual([[asked.work.id, asked.work.data]]);

    const next = await ask(platform);
    expect(next.status).toBe(201);
    const fresh = (await next.json()) as Asked;
    expect(fresh.work.data.id).not.toBe(asked.work.data.id);
  });

  it('an empty body and {} are both taken; any field is a 400 naming it, and nothing is written', async () => {
    const { env, platform, ask } = await setup();
    expect((await ask(platform, env.environmentId, {})).status).toBe(201);
    expect((await ask(platform)).status).toBe(200);
    const refused = await ask(platform, env.environmentId, { metadata: { a: '1' } });
    expect(await errorType(refused.clone(), 400)).toBe('invalid_request_error');
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain('metadata');
    expect((await ask(platform, env.environmentId, '[]')).status).toBe(400);
    expect(await countWork(t.db)).toBe(1);
  });

  it('a cloud environment is a 400 saying it has no workers of its own; an archived one a 400 environment_archived; nothing is written', async () => {
    const { admin, platform, ask, api } = await setup('cloud');
    const cloud = await createEnvironment(t.db, 'cloud');
    const res = await ask(platform, cloud);
    expect(await errorType(res.clone(), 400)).toBe('invalid_request_error');
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(
      /self_hosted.*cloud environment has no workers/,
    );

    const archived = await createEnvironment(t.db, 'self_hosted');
    expect((await api.call('POST', `/v1/environments/${archived}/archive`, { key: admin })).status).toBe(200);
    const refused = await ask(platform, archived);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({
      error: { type: 'invalid_request_error', details: { error_code: 'environment_archived' } },
    });
    expect(await countWork(t.db)).toBe(0);
  });

  it('an unknown environment, and an id Leasehold never mints, are the missing environment’s 404', async () => {
    const { platform, ask } = await setup();
    const answers = [];
    for (const id of [newId('env'), 'env_nope', 'not-an-id']) {
      const res = await ask(platform, id);
      expect(await errorType(res.clone(), 404)).toBe('not_found_error');
      answers.push(((await res.json()) as { error: { message: string } }).error.message);
    }
    expect(new Set(answers)).toEqual(new Set(['environment not found']));
    expect(await countWork(t.db)).toBe(0);
  });

  it('an environment key, no key and a revoked key are 401 and write nothing', async () => {
    const { env, ask, api } = await setup();
    const revoked = await issueApiKey(t.db, 'revoked platform key', 'platform', null);
    await revokeApiKey(t.db, revoked.id);
    expect(await errorType(await ask(env.key), 401)).toBe('authentication_error');
    expect(await errorType(await ask(revoked.key), 401)).toBe('authentication_error');
    expect(await errorType(await api.call('POST', healthchecks(env.environmentId), { key: null }), 401)).toBe(
      'authentication_error',
    );
    expect(await countWork(t.db)).toBe(0);
  });

  it('another method on the path is a 405 after authentication', async () => {
    const { env, platform, api } = await setup();
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const res = await api.call(method, healthchecks(env.environmentId), { key: platform });
      expect(res.status, method).toBe(405);
    }
    expect((await api.call('GET', healthchecks(env.environmentId), { key: null })).status).toBe(401);
  });

  it('a traceparent becomes the item’s trace context, handed to the worker with the poll', async () => {
    const { api, env, platform, ask } = await setup();
    await ask(platform, env.environmentId, undefined, { traceparent: TRACEPARENT });
    const polled = await api.call('GET', `/v1/environments/${env.environmentId}/work/poll`, { key: env.key });
    expect(polled.headers.get('traceparent')).toBe(TRACEPARENT);
  });

  it('an environment whose only work is healthchecks can be deleted, and its healthchecks go with it', async () => {
    const { admin, platform, api } = await setup();
    const bare = await createEnvironment(t.db, 'self_hosted');
    const asked = (await (await api.call('POST', healthchecks(bare), { key: platform })).json()) as Asked;
    const deleted = await api.call('DELETE', `/v1/environments/${bare}`, { key: admin });
    expect(deleted.status).toBe(200);
    const row = await maybeRow(t.db, sql`SELECT 1 AS ok FROM work_items WHERE id = ${asked.work.id}`);
    expect(row).toBeNull();
  });
});
