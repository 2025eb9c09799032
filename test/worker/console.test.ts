/**
 * The console inside workerd: sign-in, a page that reads through the queue and the API in
 * process (one Neon Pool per request), an action, and the links to its static assets.
 */

import { exports } from 'cloudflare:workers';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { issueApiKey, issueEnvironmentKey } from '../../src/auth/credentials.js';
import { maybeRow } from '../../src/db/handle.js';
import { enqueue } from '../../src/queue/enqueue.js';
import { setupSession } from '../helpers/factories.js';
import { withDb } from './db.js';

const ORIGIN = 'http://leasehold.test';

const fetchWorker = (path: string, init: RequestInit = {}) =>
  (exports as unknown as { default: { fetch(r: Request): Promise<Response> } }).default.fetch(
    new Request(`${ORIGIN}${path}`, { redirect: 'manual', ...init }),
  );

describe('the console under workerd', () => {
  it('signs in, shows an environment with its items, stops one, and links assets the Worker itself does not carry', async () => {
    const { admin, environmentId, workId } = await withDb(async (db) => {
      const s = await setupSession(db, 'self_hosted');
      await issueEnvironmentKey(db, s.environmentId, 'console test', null);
      const { work } = await enqueue(db, { ...s, kind: 'tool_exec' });
      const issued = await issueApiKey(db, 'console test admin', 'admin', null);
      return { admin: issued.key, environmentId: s.environmentId, workId: work.id };
    });

    const signIn = await fetchWorker('/console/sign-in', {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ key: admin }).toString(),
    });
    expect(signIn.status).toBe(303);
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    expect(cookie).toMatch(/^leasehold_console=/);

    const page = await fetchWorker(`/console/environments/${environmentId}`, { headers: { cookie } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(workId);
    expect(html).toContain('data-chart');

    const stop = await fetchWorker(`/console/work/${workId}/stop`, {
      method: 'POST',
      headers: { cookie, origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'mode=force',
    });
    expect(stop.status).toBe(303);
    const row = await withDb((db) =>
      maybeRow<{ state: string }>(db, sql`SELECT state FROM work_items WHERE id = ${workId}`),
    );
    expect(row?.state).toBe('stopped');

    const script = /<script src="(\/console\/assets\/uplot-[0-9a-f]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    // The Worker itself carries no asset: Cloudflare serves assets/ before the Worker runs
    // (test/worker-e2e/static-assets.test.ts checks that through the deployed bundle).
    expect((await fetchWorker(script!)).status).toBe(404);
  });
});
