/**
 * /openapi.json on the Workers build: the API Worker as `wrangler deploy` bundles it, served by
 * workerd (Miniflare's Node API) with wrangler.toml's `[assets]`. The document is a static asset,
 * answered before the Worker runs — no credentials, no database — while every other path still
 * reaches the Worker. (The workerd test pool calls the Worker's `fetch` directly, past the
 * asset router, so this lives here.)
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPENAPI_ASSET } from '../../functions/openapi.js';
import { openTestDb, type TestDb } from '../helpers/db.js';
import { type RunningWorkers, startWorkers } from '../helpers/workers.js';

let testDb: TestDb;
let workers: RunningWorkers;

beforeAll(async () => {
  testDb = await openTestDb('pg');
  workers = await startWorkers({
    databaseUrl: testDb.url!,
    // Never dialled: no request here reaches a journal route.
    natsUrl: 'ws://127.0.0.1:1',
    adminKey: 'lh_test_admin_openapi',
    modelBaseUrl: 'http://127.0.0.1:1',
    modelApiKey: 'unused',
    brain: false,
  });
}, 60_000);

afterAll(async () => {
  await workers?.close();
  await testDb?.close();
});

describe('/openapi.json on the Worker as deployed', () => {
  it('is assets/openapi.json, served as JSON without credentials and without the Worker', async () => {
    const res = await fetch(`${workers.baseURL}/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    // The app stamps a request-id on everything it answers; the asset router does not.
    expect(res.headers.get('request-id')).toBeNull();
    expect(await res.text()).toBe(readFileSync(OPENAPI_ASSET, 'utf8'));
  });

  it('a path with no file in assets/ still reaches the Worker', async () => {
    const res = await fetch(`${workers.baseURL}/no-such-file.json`);
    expect(res.status).toBe(404);
    expect(res.headers.get('request-id')).toMatch(/^req_/);
    expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
  });
});
