/**
 * The console's gate over every route it registers (read from the app, so a new page is
 * covered without a new test): nothing but sign-in and the assets answers without a signed-in
 * admin, no state-changing request passes without the console's own origin, and every answer
 * carries the security headers.
 */
import { describe, expect, it } from 'vitest';
import { testApi } from '../helpers/api.js';
import { consoleSession } from '../helpers/console.js';
import { useTestDb } from '../helpers/db.js';

const OPEN = new Set(['GET /console/sign-in', 'POST /console/sign-in', 'GET /console/assets/:file']);

describe('the console gate', () => {
  const t = useTestDb('pglite');

  function consoleRoutes() {
    const { app } = testApi(t.db);
    const routes = app.routes
      .filter((r) => r.path.startsWith('/console') && r.method !== 'ALL')
      .map((r) => ({ method: r.method, path: r.path, url: r.path.replace(/:[A-Za-z]+/g, 'x1') }));
    return { app, routes: [...new Map(routes.map((r) => [`${r.method} ${r.path}`, r])).values()] };
  }

  it('every page and live endpoint refuses a caller who has not signed in, and says where to go', async () => {
    const { app, routes } = consoleRoutes();
    expect(routes.length).toBeGreaterThan(12);
    for (const r of routes.filter((x) => !OPEN.has(`${x.method} ${x.path}`))) {
      const res = await app.request(r.url, {
        method: r.method,
        headers: { origin: 'http://localhost', 'content-type': 'application/x-www-form-urlencoded' },
        body: r.method === 'POST' ? '' : undefined,
      });
      const where = `${r.method} ${r.path}`;
      if (r.path.startsWith('/console/live/')) {
        expect(res.status, where).toBe(401);
        expect(await res.json(), where).toMatchObject({
          type: 'error',
          error: { type: 'authentication_error' },
        });
      } else if (r.path === '/console/sign-out') {
        expect(res.status, where).toBe(303);
      } else {
        expect([res.status, res.headers.get('location')], where).toEqual([303, '/console/sign-in']);
      }
    }
  });

  it('a signed-in admin still cannot post a form without the console origin', async () => {
    const { app, routes } = consoleRoutes();
    const { cookie } = await consoleSession(t.db, app);
    const posts = routes.filter((r) => r.method === 'POST');
    expect(posts.length).toBeGreaterThanOrEqual(6);
    for (const r of posts) {
      for (const origin of [undefined, 'http://evil.example', 'null']) {
        const headers: Record<string, string> = {
          cookie,
          'content-type': 'application/x-www-form-urlencoded',
        };
        if (origin) headers.origin = origin;
        const res = await app.request(r.url, { method: 'POST', headers, body: 'mode=force&name=x' });
        expect(res.status, `${r.path} from ${origin}`).toBe(403);
      }
    }
  });

  it('every console answer carries the content security policy and refuses framing', async () => {
    const { app, routes } = consoleRoutes();
    for (const r of routes.filter((x) => x.method === 'GET')) {
      const res = await app.request(r.url);
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp, r.path).toContain("default-src 'none'");
      expect(csp, r.path).toContain("script-src 'self'");
      expect(res.headers.get('x-frame-options'), r.path).toBe('DENY');
    }
  });

  it('an unknown console path sends a caller who has not signed in to sign-in, and a signed-in one to a 404 page', async () => {
    const { app } = consoleRoutes();
    const anonymous = await app.request('/console/no/such/page');
    expect([anonymous.status, anonymous.headers.get('location')]).toEqual([303, '/console/sign-in']);
    const { cookie } = await consoleSession(t.db, app);
    const missing = await app.request('/console/no/such/page', { headers: { cookie } });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toMatch(/^text\/html/);
  });
});
