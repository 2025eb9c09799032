import { describe, expect, it } from 'vitest';
import { createApp } from '../../src/api/app.js';
import { carriesRequestId, noContent, reply } from '../../src/api/reply.js';
import type { ApiDeps } from '../../src/api/types.js';

/** The app with three routes of its own beside the API's: a reply, a 204 and a plain text response. */
function appWithRoutes() {
  let replied: Response | undefined;
  const app = createApp(() => ({}) as ApiDeps, {
    console: (a) => {
      a.get('/t/reply', (c) => {
        replied = reply(c, { a: "it's" }, 201, { 'x-extra': 'yes' });
        return replied;
      });
      a.get('/t/none', (c) => noContent(c));
      a.get('/t/text', (c) => c.text('plain'));
    },
  });
  return { app, replied: () => replied };
}

describe('reply', () => {
  it('a JSON reply leaves as it was built: status, JSON with a newline, its headers and the request-id', async () => {
    const { app, replied } = appWithRoutes();
    const res = await app.request('/t/reply');
    expect(res.status).toBe(201);
    expect(await res.text()).toBe(`{"a":"it's"}\n`);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('x-extra')).toBe('yes');
    expect(res.headers.get('request-id')).toMatch(/^req_[0-9a-z]{24}$/);
    // The middleware left it alone: the very response the route built is the one sent.
    expect(res).toBe(replied());
    expect(carriesRequestId(res)).toBe(true);
  });

  it('a 204 has no body and no content type, only its request-id', async () => {
    const { app } = appWithRoutes();
    const res = await app.request('/t/none');
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
    expect([...res.headers.keys()]).toEqual(['request-id']);
    expect(res.headers.get('request-id')).toMatch(/^req_[0-9a-z]{24}$/);
  });

  it('a response built elsewhere gets its request-id from the middleware, once', async () => {
    const { app } = appWithRoutes();
    const res = await app.request('/t/text');
    expect(await res.text()).toBe('plain');
    expect(carriesRequestId(res)).toBe(false);
    expect(res.headers.get('request-id')).toMatch(/^req_[0-9a-z]{24}$/);
  });

  it('every request gets an id of its own', async () => {
    const { app } = appWithRoutes();
    const ids = new Set<string | null>();
    for (const path of ['/t/reply', '/t/reply', '/t/none', '/t/text', '/nowhere']) {
      ids.add((await app.request(path)).headers.get('request-id'));
    }
    expect(ids.size).toBe(5);
    expect(ids.has(null)).toBe(false);
  });
});
