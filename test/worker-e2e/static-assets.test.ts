/**
 * The static files on the Workers build, reached as a deployed Worker is: the API Worker as
 * `wrangler deploy` bundles it, with wrangler.toml's `[assets]`, served by workerd through
 * Miniflare (the workerd test pool calls the Worker's `fetch` directly, past the asset router,
 * so this lives here). /openapi.json and the console's files answer before the Worker runs —
 * no credentials, no database — with the same bytes and headers the Node server gives them,
 * while every other path still reaches the Worker. One Worker start serves both.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPENAPI_ASSET } from '../../functions/openapi.js';
import { ASSETS_DIR } from '../../functions/static-files.js';
import { ASSET_PATHS } from '../../src/console/assets.js';
import { testApi } from '../helpers/api.js';
import { openTestDb, type TestDb } from '../helpers/db.js';
import { type RunningWorkers, startWorkers } from '../helpers/workers.js';

const HEADERS = [
  'cache-control',
  'x-content-type-options',
  'content-security-policy',
  'referrer-policy',
  'x-frame-options',
];

let t: TestDb;
let workers: RunningWorkers;

beforeAll(async () => {
  t = await openTestDb('pg');
  workers = await startWorkers({
    databaseUrl: t.url!,
    // Nothing here touches the journal or a model: the Worker connects to neither.
    natsUrl: 'ws://127.0.0.1:9',
    adminKey: 'lh_admin_static_assets_test',
    modelBaseUrl: 'http://127.0.0.1:9',
    modelApiKey: 'unused',
    brain: false,
  });
}, 120_000);

afterAll(async () => {
  await workers?.close();
  await t?.close();
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

describe('the console files on the Worker as deployed', () => {
  it('every console file answers 200 with the bytes in assets/ and the headers the Node server gives it', async () => {
    const node = testApi(t.db).app;
    for (const path of Object.values(ASSET_PATHS)) {
      const edge = await fetch(`${workers.baseURL}${path}`);
      expect(edge.status, path).toBe(200);
      const body = Buffer.from(await edge.arrayBuffer());
      expect(body.equals(readFileSync(`${ASSETS_DIR}${path}`)), path).toBe(true);
      const local = await node.request(path);
      expect(local.status, path).toBe(200);
      for (const h of HEADERS) expect(edge.headers.get(h), `${path} ${h}`).toBe(local.headers.get(h));
      // The two may spell a type differently (text/javascript vs application/javascript).
      expect(edge.headers.get('content-type'), path).toMatch(
        path.endsWith('.js') ? /javascript/ : /text\/css/,
      );
    }
  });

  it("an unknown asset is the Worker's 404, as on Node", async () => {
    const res = await fetch(`${workers.baseURL}/console/assets/console-000000000000.js`);
    expect(res.status).toBe(404);
    expect(await res.text()).toBe('no such asset\n');
  });
});
