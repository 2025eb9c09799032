import { describe, expect, it } from 'vitest';
import { issueApiKey, revokeApiKey } from '../../src/auth/credentials.js';
import { ASSET_PATHS } from '../../src/console/assets.js';
import { apiKey, environmentWithKey, testApi } from '../helpers/api.js';
import {
  COOKIE_NAME,
  consoleCookie,
  consoleSession,
  formInit,
  html,
  ORIGIN,
  postSignIn,
  withCookie,
} from '../helpers/console.js';
import { useTestDb } from '../helpers/db.js';
import { wireWork } from '../helpers/factories.js';
import { expectError } from '../helpers/management.js';

const REFUSED = 'That is not a live admin API key.';

describe('console sign-in, sign-out and the gate', () => {
  const t = useTestDb('pglite');

  it('GET /console without a cookie redirects (303) to the sign-in page', async () => {
    const { app } = testApi(t.db);
    for (const path of [
      '/console',
      '/console/environments/env_x',
      '/console/work/work_x',
      '/console/journal',
    ]) {
      const res = await app.request(path);
      expect(res.status, path).toBe(303);
      expect(res.headers.get('location'), path).toBe('/console/sign-in');
    }
  });

  it('signing in with an admin key redirects to /console and sets a session cookie: HttpOnly, SameSite=Strict, Path=/console, no Max-Age or Expires', async () => {
    const { app } = testApi(t.db);
    const key = await apiKey(t.db, 'admin');
    const res = await postSignIn(app, key);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/console');
    const cookies = res.headers.getSetCookie();
    expect(cookies).toHaveLength(1);
    const attrs = cookies[0]!.split(';').map((a) => a.trim().toLowerCase());
    expect(attrs[0]!.startsWith(`${COOKIE_NAME}=`)).toBe(true);
    expect(attrs).toContain('httponly');
    expect(attrs).toContain('samesite=strict');
    expect(attrs).toContain('path=/console');
    expect(attrs.some((a) => a.startsWith('max-age') || a.startsWith('expires'))).toBe(false);
    const signedIn = withCookie(app, consoleCookie(res)!);
    expect(await html(await signedIn.page('/console'))).toContain('<h1>Environments</h1>');
  });

  it('a platform key, an environment key, a revoked admin key or an empty field is refused: 401 page with the error, no cookie', async () => {
    const { app } = testApi(t.db);
    const revoked = await issueApiKey(t.db, 'gone', 'admin', null);
    await revokeApiKey(t.db, revoked.id);
    const candidates = {
      platform: await apiKey(t.db, 'platform'),
      environment: (await environmentWithKey(t.db)).key,
      revoked: revoked.key,
      empty: '',
      blank: '   ',
    };
    for (const [what, key] of Object.entries(candidates)) {
      const res = await postSignIn(app, key);
      const body = await html(res, 401);
      expect(body, what).toContain(REFUSED);
      expect(res.headers.getSetCookie(), what).toEqual([]);
      if (key.trim() !== '') expect(body, what).not.toContain(key);
    }
  });

  it('the admin key appears in no response body or Location header of sign-in or the pages', async () => {
    const target = await environmentWithKey(t.db);
    const work = await wireWork(t.db, target, 'active');
    const s = await consoleSession(t.db);
    const signIn = await postSignIn(s.app, s.key);
    const responses = [
      signIn,
      await s.page('/console'),
      await s.page('/console/sign-in'),
      await s.page(`/console/environments/${target.environmentId}`),
      await s.page(`/console/work/${work.id}`),
      await s.page(`/console/work/${work.id}/stop`),
      await s.page('/console/journal?run=r1'),
      await s.page('/console/no-such-page'),
      await s.page(`/console/live/summaries?ids=${target.environmentId}`),
      await s.post('/console/sign-out'),
    ];
    for (const res of responses) {
      expect(res.headers.get('location') ?? '').not.toContain(s.key);
      expect(await res.text()).not.toContain(s.key);
    }
  });

  it('sign-out clears the cookie (Max-Age=0, Path=/console) and redirects to sign-in', async () => {
    const s = await consoleSession(t.db);
    const res = await s.post('/console/sign-out');
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/console/sign-in');
    const cleared = res.headers.getSetCookie().find((c) => c.startsWith(`${COOKIE_NAME}=`));
    expect(cleared).toBeDefined();
    expect(cleared!.split(';')[0]).toBe(`${COOKIE_NAME}=`);
    expect(cleared).toMatch(/Max-Age=0/i);
    expect(cleared).toMatch(/Path=\/console/i);
  });

  it('a cookie whose admin key was revoked no longer signs in: pages redirect, live data is 401', async () => {
    const s = await consoleSession(t.db);
    expect((await s.page('/console')).status).toBe(200);
    await revokeApiKey(t.db, s.keyId);
    // A fresh app has an empty credential cache, as another replica (or the TTL's end) would.
    const later = withCookie(testApi(t.db).app, s.cookie);
    const res = await later.page('/console');
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/console/sign-in');
    await expectError(await later.page('/console/live/summaries?ids=env_a'), 401, 'authentication_error');
  });

  it('a POST with neither Origin nor Sec-Fetch-Site is 403 and does nothing: no sign-in, no sign-out', async () => {
    const { app } = testApi(t.db);
    const key = await apiKey(t.db, 'admin');
    const signIn = await app.request('/console/sign-in', formInit({ key }));
    await html(signIn, 403);
    expect(signIn.headers.getSetCookie()).toEqual([]);
    const s = await consoleSession(t.db, app);
    const signOut = await app.request('/console/sign-out', formInit({}, { cookie: s.cookie }));
    await html(signOut, 403);
    expect(signOut.headers.getSetCookie()).toEqual([]);
    // Sec-Fetch-Site: same-origin alone is a console page's post.
    const fetchSite = await app.request(
      '/console/sign-in',
      formInit({ key }, { 'sec-fetch-site': 'same-origin' }),
    );
    expect(fetchSite.status).toBe(303);
  });

  it('a POST from a foreign Origin is 403 whatever Sec-Fetch-Site says, and sets no cookie', async () => {
    const { app } = testApi(t.db);
    const key = await apiKey(t.db, 'admin');
    for (const origin of ['http://evil.example', 'https://localhost', 'http://localhost:8080']) {
      const res = await app.request(
        '/console/sign-in',
        formInit({ key }, { origin, 'sec-fetch-site': 'same-origin' }),
      );
      await html(res, 403);
      expect(res.headers.getSetCookie(), origin).toEqual([]);
    }
  });

  it('a sign-in posted as JSON rather than a url-encoded form is a 400 page and sets no cookie', async () => {
    const { app } = testApi(t.db);
    const key = await apiKey(t.db, 'admin');
    const res = await app.request('/console/sign-in', {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'application/json' },
      body: JSON.stringify({ key }),
    });
    expect(await html(res, 400)).toContain('application/x-www-form-urlencoded');
    expect(res.headers.getSetCookie()).toEqual([]);
  });

  it('the live endpoints without a cookie answer the API’s 401 JSON envelope, not a redirect', async () => {
    const { app } = testApi(t.db);
    for (const path of ['/console/live/summaries?ids=env_a', '/console/live/environments/env_a/samples'])
      await expectError(await app.request(path), 401, 'authentication_error');
  });

  it('every /console response carries the CSP (default-src none, script-src self); pages are no-store', async () => {
    const s = await consoleSession(t.db);
    const anon = testApi(t.db).app;
    const pages = [
      await anon.request('/console'),
      await anon.request('/console/sign-in'),
      await postSignIn(anon, 'wrong'),
      await s.page('/console'),
      await s.page('/console/nowhere'),
      await s.page('/console/environments/env_0000000000000000000000zz'),
      await s.post('/console/sign-out', {}, { origin: 'http://evil.example' }),
    ];
    const others = [
      await anon.request('/console/live/summaries?ids=a'),
      await s.page('/console/live/summaries?ids=a'),
      await anon.request(ASSET_PATHS.js),
      await anon.request('/console/assets/nothing.js'),
    ];
    for (const res of [...pages, ...others]) {
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp.split(';').map((d) => d.trim())).toEqual(
        expect.arrayContaining(["default-src 'none'", "script-src 'self'"]),
      );
    }
    for (const res of pages) expect(res.headers.get('cache-control')).toBe('no-store');
  });
});
