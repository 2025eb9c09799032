import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { enqueue } from '../../src/queue/enqueue.js';
import { environmentWithKey, testApi } from '../helpers/api.js';
import { consoleSession, formInit, html, ORIGIN } from '../helpers/console.js';
import { useTestDb } from '../helpers/db.js';
import { createSession, readWork, wireWork } from '../helpers/factories.js';

/** The secret the key-issued page shows in its read-only field. */
const shownSecret = (page: string) => /<input class="secret"[^>]* value="([^"]+)"/.exec(page)?.[1];

describe('console actions', () => {
  const t = useTestDb('pglite');

  const stats = (envId: string, key: string) =>
    testApi(t.db).call('GET', `/v1/environments/${envId}/work/stats`, { key });
  const liveKeys = async (envId: string) => {
    const result = (await t.db.execute(
      sql`SELECT count(*)::int AS n FROM environment_keys WHERE environment_id = ${envId} AND revoked_at IS NULL`,
    )) as { rows: { n: number }[] };
    return result.rows[0]!;
  };

  it('GET stop asks first: a form posting to the stop action with graceful and force choices', async () => {
    const target = await environmentWithKey(t.db);
    const work = await wireWork(t.db, target, 'active');
    const s = await consoleSession(t.db);
    const page = await html(await s.page(`/console/work/${work.id}/stop`));
    expect(page).toContain(`<form method="post" action="/console/work/${work.id}/stop">`);
    expect(page).toMatch(/name="mode" value="graceful" checked/);
    expect(page).toMatch(/name="mode" value="force"/);
    expect((await readWork(t.db, work.id))!.state).toBe('active');
  });

  it('a graceful stop of an active item redirects to its page with done=stop-requested; the item is stopping', async () => {
    const target = await environmentWithKey(t.db);
    const work = await wireWork(t.db, target, 'active');
    const s = await consoleSession(t.db);
    const res = await s.post(`/console/work/${work.id}/stop`, { mode: 'graceful' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(`/console/work/${work.id}?done=stop-requested`);
    expect((await readWork(t.db, work.id))!.state).toBe('stopping');
    expect(await html(await s.page(res.headers.get('location')!))).toContain('Stop requested');
  });

  it('a forced stop redirects with done=stopped and the item is stopped', async () => {
    const target = await environmentWithKey(t.db);
    const work = await wireWork(t.db, target, 'active');
    const s = await consoleSession(t.db);
    const res = await s.post(`/console/work/${work.id}/stop`, { mode: 'force' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(`/console/work/${work.id}?done=stopped`);
    expect((await readWork(t.db, work.id))!.state).toBe('stopped');
  });

  it('stopping a stopped item re-asks with the API’s 409 message and changes nothing', async () => {
    const target = await environmentWithKey(t.db);
    const work = await wireWork(t.db, target, 'stopped');
    const s = await consoleSession(t.db);
    const api = await testApi(t.db).call(
      'POST',
      `/v1/environments/${target.environmentId}/work/${work.id}/stop`,
      {
        key: s.key,
        body: { force: true },
      },
    );
    expect(api.status).toBe(409);
    const message = ((await api.json()) as { error: { message: string } }).error.message;
    const before = await readWork(t.db, work.id);
    for (const mode of ['graceful', 'force']) {
      const page = await html(await s.post(`/console/work/${work.id}/stop`, { mode }), 409);
      expect(page).toContain(`<p class="error" role="alert">${message}</p>`);
      expect(page).toContain(`action="/console/work/${work.id}/stop"`);
    }
    expect(await readWork(t.db, work.id)).toEqual(before);
  });

  it('a claim-lane item cannot be stopped from the console: 404 for the question and the action', async () => {
    const target = await environmentWithKey(t.db);
    const { work } = await enqueue(t.db, { ...target, kind: 'model_turn' });
    const s = await consoleSession(t.db);
    await html(await s.page(`/console/work/${work.id}/stop`), 404);
    await html(await s.post(`/console/work/${work.id}/stop`, { mode: 'force' }), 404);
    expect((await readWork(t.db, work.id))!.state).toBe('queued');
  });

  it('cancelling a session stops its in-flight items on both lanes and redirects to the item it came from', async () => {
    const target = await environmentWithKey(t.db);
    const poll = await wireWork(t.db, target, 'active');
    const { work: claim } = await enqueue(t.db, { ...target, kind: 'model_turn' });
    const other = await enqueue(t.db, {
      environmentId: target.environmentId,
      sessionId: await createSession(t.db, target.environmentId),
      kind: 'model_turn',
    });
    const s = await consoleSession(t.db);
    const path = `/console/sessions/${target.sessionId}/cancel?from=${poll.id}`;
    expect(await html(await s.page(path))).toContain(
      `action="/console/sessions/${target.sessionId}/cancel?from=`,
    );
    const res = await s.post(path);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(`/console/work/${poll.id}?done=session-cancelled`);
    expect((await readWork(t.db, poll.id))!.state).toBe('stopped');
    expect((await readWork(t.db, claim.id))!.state).toBe('stopped');
    expect((await readWork(t.db, other.work.id))!.state).toBe('queued');
    const bare = await s.post(`/console/sessions/${target.sessionId}/cancel`);
    expect(bare.headers.get('location')).toBe('/console?done=session-cancelled');
  });

  it('creating a key answers 201 with its secret once; the secret works as that environment’s key and is not on the environment page', async () => {
    const target = await environmentWithKey(t.db);
    const s = await consoleSession(t.db);
    expect(await html(await s.page(`/console/environments/${target.environmentId}/keys/new`))).toContain(
      `action="/console/environments/${target.environmentId}/keys"`,
    );
    const page = await html(
      await s.post(`/console/environments/${target.environmentId}/keys`, { name: 'ci <b>' }),
      201,
    );
    const secret = shownSecret(page);
    expect(secret).toBeDefined();
    expect(page).toContain('ci &lt;b&gt;');
    const res = await stats(target.environmentId, secret!);
    expect(res.status, await res.clone().text()).toBe(200);
    expect(await res.json()).toMatchObject({ type: 'work_queue_stats' });
    const envPage = await html(await s.page(`/console/environments/${target.environmentId}`));
    expect(envPage).toContain('ci &lt;b&gt;');
    expect(envPage).not.toContain(secret);
  });

  it('creating a key for a cloud environment re-asks with the API’s 400 message and issues nothing', async () => {
    const target = await environmentWithKey(t.db, 'cloud');
    const before = await liveKeys(target.environmentId);
    const s = await consoleSession(t.db);
    const page = await html(
      await s.post(`/console/environments/${target.environmentId}/keys`, { name: 'x' }),
      400,
    );
    expect(page).toContain('environment keys are issued only for self_hosted environments');
    expect(page).toContain('<h1>Create an environment key?</h1>');
    expect(shownSecret(page)).toBeUndefined();
    expect(await liveKeys(target.environmentId)).toEqual(before);
  });

  it('revoking a key redirects with done=key-revoked and the key no longer authenticates', async () => {
    const target = await environmentWithKey(t.db);
    expect((await stats(target.environmentId, target.key)).status).toBe(200);
    const s = await consoleSession(t.db);
    const path = `/console/environments/${target.environmentId}/keys/${target.keyId}/revoke`;
    expect(await html(await s.page(path))).toContain(`action="${path}"`);
    const res = await s.post(path);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(
      `/console/environments/${target.environmentId}?done=key-revoked`,
    );
    expect((await stats(target.environmentId, target.key)).status).toBe(401);
  });

  it('every action POST without a same-origin Origin or Sec-Fetch-Site is 403 and changes nothing', async () => {
    const target = await environmentWithKey(t.db);
    const work = await wireWork(t.db, target, 'active');
    const { work: claim } = await enqueue(t.db, { ...target, kind: 'model_turn' });
    const s = await consoleSession(t.db);
    const env = `/console/environments/${target.environmentId}`;
    const posts: [string, Record<string, string>][] = [
      [`/console/work/${work.id}/stop`, { mode: 'force' }],
      [`/console/sessions/${target.sessionId}/cancel`, {}],
      [`${env}/keys`, { name: 'sneaky' }],
      [`${env}/keys/${target.keyId}/revoke`, {}],
    ];
    const refusals: Record<string, string>[] = [
      { cookie: s.cookie },
      { cookie: s.cookie, origin: 'http://evil.example' },
      { cookie: s.cookie, origin: 'http://evil.example', 'sec-fetch-site': 'same-origin' },
      { cookie: s.cookie, origin: 'null', 'sec-fetch-site': 'cross-site' },
      { cookie: s.cookie, 'sec-fetch-site': 'same-site' },
    ];
    for (const [path, form] of posts)
      for (const headers of refusals) {
        const res = await s.app.request(path, formInit(form, headers));
        expect(res.status, `${path} ${JSON.stringify(headers)}`).toBe(403);
        expect(shownSecret(await res.text())).toBeUndefined();
      }
    expect((await readWork(t.db, work.id))!.state).toBe('active');
    expect((await readWork(t.db, claim.id))!.state).toBe('queued');
    expect(await liveKeys(target.environmentId)).toEqual({ n: 1 });
    expect((await stats(target.environmentId, target.key)).status).toBe(200);
    // The same post with the console's origin does act (the refusals above were the origin's).
    expect((await s.post(`${env}/keys/${target.keyId}/revoke`, {}, { origin: ORIGIN })).status).toBe(303);
  });
});
