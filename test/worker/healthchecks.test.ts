/** Healthchecks on the Worker as deployed, inside workerd, over the Neon driver. */
import { exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { issueApiKey, issueEnvironmentKey } from '../../src/auth/credentials.js';
import { createEnvironment } from '../helpers/factories.js';
import { withDb } from './db.js';

const call = (path: string, key: string, init: RequestInit = {}) =>
  (exports as unknown as { default: { fetch(r: Request): Promise<Response> } }).default.fetch(
    new Request(`http://leasehold.test${path}`, {
      ...init,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    }),
  );

describe('healthchecks on the Worker under workerd', () => {
  it('serves the healthchecks route: 201 with a healthcheck item that the environment’s worker polls, acks and stops', async () => {
    const { environmentId, envKey, platformKey } = await withDb(async (db) => {
      const id = await createEnvironment(db, 'self_hosted');
      return {
        environmentId: id,
        envKey: (await issueEnvironmentKey(db, id, 'worker healthcheck', null)).key,
        platformKey: (await issueApiKey(db, 'worker healthcheck platform', 'platform', null)).key,
      };
    });
    const ask = () =>
      call(`/v1/platform/environments/${environmentId}/healthchecks`, platformKey, {
        method: 'POST',
        body: '{}',
      });

    const created = await ask();
    expect(created.status).toBe(201);
    const asked = (await created.json()) as { created: boolean; work: { id: string; data: unknown } };
    expect(asked).toMatchObject({
      created: true,
      work: { environment_id: environmentId, state: 'queued', data: { type: 'healthcheck' } },
    });
    const again = await ask();
    expect([again.status, ((await again.json()) as typeof asked).work.id]).toEqual([200, asked.work.id]);

    const base = `/v1/environments/${environmentId}/work`;
    expect(await (await call(`${base}/poll`, envKey)).json()).toMatchObject({
      id: asked.work.id,
      data: asked.work.data,
    });
    expect(
      await (await call(`${base}/${asked.work.id}/ack`, envKey, { method: 'POST' })).json(),
    ).toMatchObject({
      state: 'starting',
    });
    const stopped = await call(`${base}/${asked.work.id}/stop`, envKey, {
      method: 'POST',
      body: JSON.stringify({ force: true }),
    });
    expect(await stopped.json()).toMatchObject({ state: 'stopped', acknowledged_at: expect.any(String) });
    expect((await ask()).status).toBe(201);
  });
});
