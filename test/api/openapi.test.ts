import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OPENAPI_ASSET } from '../../functions/openapi.js';
import { createApp } from '../../src/api/app.js';
import { documentedRoutes } from '../../src/api/openapi.js';
import { renderOpenApi } from '../../src/api/openapi-document.js';
import { registerConsole } from '../../src/console/index.js';
import { testApi } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';

/**
 * The document frozen: a change to how a schema is declared must not change what the API
 * documents (nor what the fuzz suite draws from it). A deliberate API change updates this file
 * along with the routes.
 */
const GOLDEN = JSON.parse(readFileSync(new URL('./openapi.golden.json', import.meta.url), 'utf8')) as unknown;

describe('GET /openapi.json', () => {
  const t = useTestDb('pglite');

  it('assets/openapi.json is the frozen document (test/api/openapi.golden.json), and the app serves it as it is', async () => {
    expect(JSON.parse(readFileSync(OPENAPI_ASSET, 'utf8'))).toEqual(GOLDEN);
    const res = await testApi(t.db).call('GET', '/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.json()).toEqual(GOLDEN);
  });

  it("assets/openapi.json is what the routes' schemas render now", () => {
    expect(readFileSync(OPENAPI_ASSET, 'utf8'), 'assets/openapi.json is stale: run npm run openapi').toBe(
      renderOpenApi(),
    );
  });

  it('an app given no document has no /openapi.json (the Worker serves the file as a static asset)', async () => {
    const app = createApp({ db: t.db }, { console: registerConsole });
    expect(app.routes.some((r) => r.path === '/openapi.json')).toBe(false);
    expect((await app.request('/openapi.json')).status).toBe(404);
  });

  it('documents exactly the API routes the app serves (fallbacks and the console pages aside)', async () => {
    const { app } = testApi(t.db);
    const served = app.routes
      .filter((r) => r.method !== 'ALL' && r.path !== '/openapi.json' && !r.path.startsWith('/console'))
      .map((r) => `${r.method} ${r.path}`);
    const documented = documentedRoutes().map((r) => `${r.method.toUpperCase()} ${r.path}`);
    expect([...new Set(served)].sort()).toEqual([...documented].sort());
  });

  it('is an OpenAPI 3.1 document served without credentials, every operation with responses', async () => {
    const res = await testApi(t.db).call('GET', '/openapi.json');
    expect(res.status).toBe(200);
    const doc = (await res.json()) as {
      openapi: string;
      paths: Record<string, Record<string, { responses: object }>>;
    };
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.paths['/v1/environments/{environmentId}/work/poll']?.get).toBeDefined();
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        expect(Object.keys(op.responses).length, `${method} ${path}`).toBeGreaterThan(1);
      }
    }
  });

  it('says stop answers 200 with the work item, and that a cloud environment takes no key (400)', async () => {
    const doc = (await (await testApi(t.db).call('GET', '/openapi.json')).json()) as {
      paths: Record<
        string,
        Record<string, { responses: Record<string, { description: string; content?: object }> }>
      >;
    };
    const stop = doc.paths['/v1/environments/{environmentId}/work/{workId}/stop']!.post!.responses;
    const get = doc.paths['/v1/environments/{environmentId}/work/{workId}']!.get!.responses;
    expect(Object.keys(stop)).not.toContain('204');
    expect(stop['200']!.content).toEqual(get['200']!.content);
    const keys = doc.paths['/v1/environments/{environmentId}/keys']!.post!.responses;
    expect(keys['400']!.description).toMatch(/cloud/);
  });
});
