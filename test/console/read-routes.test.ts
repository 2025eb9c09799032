import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { enqueue } from '../../src/queue/enqueue.js';
import { inspectWork } from '../../src/queue/inspect-work.js';
import { environmentWithKey } from '../helpers/api.js';
import { consoleSession, html } from '../helpers/console.js';
import { useTestDb } from '../helpers/db.js';
import { createEnvironment, createSession, insertWork, wireWork } from '../helpers/factories.js';
import { UNKNOWN_ENV } from '../helpers/management.js';

const XSS = '<script>alert(1)</script>';
const ESCAPED = '&lt;script&gt;alert(1)&lt;/script&gt;';

/** The work ids an environment page links to, in page order. */
const workLinks = (page: string) =>
  [...page.matchAll(/href="\/console\/work\/([^"/?]+)"/g)].map((m) => m[1]!);
/** The figure the page shows for `field` of environment `id`. */
const figure = (page: string, id: string, field: string) =>
  new RegExp(`data-live-env="${id}" data-field="${field}">([^<]*)<`).exec(page)?.[1];

describe('console pages', () => {
  const t = useTestDb('pglite');

  it('the environments page lists every environment with its queue depth', async () => {
    const busy = await createEnvironment(t.db, 'self_hosted');
    const idle = await createEnvironment(t.db, 'cloud');
    for (let i = 0; i < 3; i++) {
      const sessionId = await createSession(t.db, busy);
      await enqueue(t.db, { environmentId: busy, sessionId, kind: 'tool_exec' });
    }
    const s = await consoleSession(t.db);
    const page = await html(await s.page('/console'));
    expect(page).toContain(`href="/console/environments/${busy}"`);
    expect(page).toContain(`href="/console/environments/${idle}"`);
    expect(figure(page, busy, 'depth')).toBe('3');
    expect(figure(page, busy, 'pending')).toBe('0');
    expect(figure(page, idle, 'depth')).toBe('0');
  });

  it('an environment named <script>alert(1)</script> is escaped on every page that shows it', async () => {
    const target = await environmentWithKey(t.db);
    await t.db.execute(sql`UPDATE environments SET name = ${XSS} WHERE id = ${target.environmentId}`);
    const s = await consoleSession(t.db);
    for (const path of ['/console', `/console/environments/${target.environmentId}`]) {
      const page = await html(await s.page(path));
      expect(page, path).not.toContain(XSS);
      expect(page, path).toContain(ESCAPED);
    }
  });

  it('the environment page filters its items by state and by kind', async () => {
    const { environmentId, sessionId } = await environmentWithKey(t.db);
    const [queued] = await insertWork(t.db, { environmentId, sessionId });
    const [stopped] = await insertWork(t.db, { environmentId, sessionId }, { state: 'stopped' });
    const [turn] = await insertWork(t.db, { environmentId, sessionId }, { kind: 'model_turn' });
    const s = await consoleSession(t.db);
    const base = `/console/environments/${environmentId}`;
    expect(new Set(workLinks(await html(await s.page(base))))).toEqual(new Set([queued, stopped, turn]));
    expect(workLinks(await html(await s.page(`${base}?state=stopped`)))).toEqual([stopped]);
    expect(new Set(workLinks(await html(await s.page(`${base}?state=queued`))))).toEqual(
      new Set([queued, turn]),
    );
    expect(workLinks(await html(await s.page(`${base}?kind=model_turn`)))).toEqual([turn]);
    expect(workLinks(await html(await s.page(`${base}?state=queued&kind=tool_exec`)))).toEqual([queued]);
  });

  it('an unknown state, kind or page cursor is a 400 page, not a 500', async () => {
    const { environmentId } = await environmentWithKey(t.db);
    const s = await consoleSession(t.db);
    const base = `/console/environments/${environmentId}`;
    expect(await html(await s.page(`${base}?state=exploded`), 400)).toContain('state must be one of');
    expect(await html(await s.page(`${base}?kind=${encodeURIComponent(XSS)}`), 400)).not.toContain(XSS);
    await html(await s.page(`${base}?page=not-a-cursor`), 400);
  });

  it('“Older items” continues the list where the page ended: every item once, none twice', async () => {
    const { environmentId, sessionId } = await environmentWithKey(t.db);
    const all = await insertWork(t.db, { environmentId, sessionId }, { state: 'stopped', count: 30 });
    const s = await consoleSession(t.db);
    const seen: string[] = [];
    let path: string | undefined = `/console/environments/${environmentId}?state=stopped`;
    for (let pages = 0; path !== undefined; pages++) {
      expect(pages).toBeLessThan(3);
      const page = await html(await s.page(path));
      seen.push(...workLinks(page));
      const older = /<a class="button secondary" href="([^"]+)">Older items<\/a>/.exec(page)?.[1];
      path = older?.replaceAll('&amp;', '&');
      if (path) expect(new URL(path, 'http://localhost').searchParams.get('state')).toBe('stopped');
    }
    expect(seen).toHaveLength(30);
    expect(new Set(seen)).toEqual(new Set(all));
  });

  it('an unknown environment is a 404 HTML page', async () => {
    const s = await consoleSession(t.db);
    expect(await html(await s.page(`/console/environments/${UNKNOWN_ENV}`), 404)).toContain('Not found');
  });

  it('the work item page shows its timeline stamps, claims, escaped metadata and the session’s other items', async () => {
    const target = await environmentWithKey(t.db);
    const work = await wireWork(t.db, target, 'active', { metadata: { note: '<b>bold</b>', [XSS]: 'v' } });
    const sibling = await enqueue(t.db, { ...target, kind: 'model_turn' });
    const stranger = await enqueue(t.db, {
      environmentId: target.environmentId,
      sessionId: await createSession(t.db, target.environmentId),
      kind: 'model_turn',
    });
    const item = (await inspectWork(t.db, work.id))!;
    const s = await consoleSession(t.db);
    const page = await html(await s.page(`/console/work/${work.id}`));
    for (const stamp of [item.createdAt, item.acknowledgedAt, item.startedAt, item.lastHeartbeat])
      expect(page).toContain(`<time datetime="${stamp}">`);
    expect(item.acknowledgedAt).not.toBeNull();
    expect(page).toMatch(/<dt>Claims<\/dt><dd>1 </);
    expect(page).toContain('&lt;b&gt;bold&lt;/b&gt;');
    expect(page).toContain(ESCAPED);
    expect(page).not.toContain('<b>bold</b>');
    expect(page).not.toContain(XSS);
    expect(workLinks(page)).toContain(sibling.work.id);
    expect(workLinks(page)).not.toContain(stranger.work.id);
  });

  it('an unknown work id is a 404 HTML page', async () => {
    const s = await consoleSession(t.db);
    expect(await html(await s.page('/console/work/work_0000000000000000000000zz'), 404)).toContain(
      'work item not found',
    );
  });

  it('the journal page without NATS says the journal is not configured, with 503', async () => {
    const s = await consoleSession(t.db);
    expect(await html(await s.page('/console/journal'))).toContain('<h1>Journals</h1>');
    const page = await html(await s.page('/console/journal?run=run_1'), 503);
    expect(page).toContain('not configured');
    expect(await html(await s.page('/console/journal?run=a.b'), 400)).toContain('A run id is');
  });

  it('an unknown console path is a 404 HTML page, not the API’s JSON', async () => {
    const s = await consoleSession(t.db);
    for (const path of ['/console/nope', '/console/environments', '/console/work/x/y/z']) {
      const res = await s.page(path);
      expect(res.status, path).toBe(404);
      expect(res.headers.get('content-type'), path).toMatch(/^text\/html/);
    }
  });
});
