/**
 * The console end to end: the real Node server (PostgreSQL, a private nats-server for the
 * journal) driven by Debian's Chromium. One operator session, in order: sign in, watch depth
 * change live, open an item's timeline, stop it, read a journal and its check report. Each
 * page is saved as a screenshot under artifacts/console/.
 */
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runOnce } from '../../src/housekeeping/index.js';
import { type Browser, launchBrowser } from '../helpers/browser.js';
import { openTestDb, type TestDb } from '../helpers/db.js';
import { provisionJournal } from '../helpers/journal.js';
import { useNatsServer } from '../helpers/nats.js';
import { seedMarkedJournal } from '../helpers/raw-journal.js';
import { type RunningServer, startServer } from '../helpers/server.js';

const RUN = 'run-e2e';

describe('the console in Chromium', () => {
  const nats = useNatsServer();
  let db: TestDb;
  let server: RunningServer;
  let browser: Browser;
  let nc: NatsConnection;
  let envId: string;
  let envKey: string;

  async function api<T>(method: string, path: string, body?: unknown, key = server.adminKey): Promise<T> {
    const res = await fetch(`${server.baseURL}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return (res.status === 204 ? undefined : await res.json()) as T;
  }
  const enqueue = (session: string) =>
    api('POST', '/v1/platform/work', { environment_id: envId, session_id: session, kind: 'tool_exec' });

  beforeAll(async () => {
    await provisionJournal(nats);
    nc = await nats.connect();
    db = await openTestDb('pg');
    // Housekeeping off: the test samples the queue itself, when it wants a point.
    server = await startServer({
      databaseUrl: db.url!,
      env: { NATS_URL: nats.wsUrl, LEASEHOLD_HOUSEKEEPING_EVERY_MS: '0' },
    });
    const env = await api<{ id: string }>('POST', '/v1/environments', {
      name: 'Build farm',
      config: { type: 'self_hosted' },
    });
    envId = env.id;
    envKey = (await api<{ key: string }>('POST', `/v1/environments/${envId}/keys`, { name: 'worker-1' })).key;
    for (const s of ['s1', 's2', 's3']) await enqueue(s);
    // An hour of history: samples as housekeeping would have left them, one a minute.
    await runOnce({ db: db.db });
    await db.db.execute(sql`INSERT INTO queue_samples (environment_id, minute, depth, pending, workers_polling, claim_queued)
      SELECT ${envId}, date_trunc('minute', now()) - g * interval '1 minute', (g % 7), (g % 3), 1, 0
        FROM generate_series(1, 59) AS g
      ON CONFLICT DO NOTHING`);
    // A journal with what the step page must mark: a fenced claim, an interrupted tool, a violation.
    await seedMarkedJournal(jetstream(nc), RUN);
    browser = await launchBrowser();
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await nc?.close();
    await server?.stop();
    await db?.close();
  });

  it('signs in with the admin key, which stays out of URLs, script-visible storage and the page', async () => {
    const { page } = browser;
    await page.goto(`${server.baseURL}/console`);
    expect(new URL(page.url()).pathname).toBe('/console/sign-in');
    await browser.shot('01-sign-in');
    await page.getByLabel('Admin API key').fill(server.adminKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Environments' }).waitFor();
    expect(browser.requests.some((u) => u.includes(server.adminKey))).toBe(false);
    const visible = await page.evaluate(() => [
      document.cookie,
      JSON.stringify(sessionStorage),
      JSON.stringify(localStorage),
      document.documentElement.outerHTML,
    ]);
    for (const v of visible) expect(v).not.toContain(server.adminKey);
  });

  it('shows the environment and its depth change live after enqueues, without a reload', async () => {
    const { page } = browser;
    const depth = page.locator(`td[data-live-env="${envId}"][data-field="depth"]`);
    await expect.poll(() => depth.textContent()).toBe('3');
    await page.evaluate(() => {
      (window as unknown as { stayed: boolean }).stayed = true;
    });
    for (const s of ['s4', 's5', 's6', 's7']) await enqueue(s);
    await expect.poll(() => depth.textContent(), { timeout: 15_000 }).toBe('7');
    expect(await page.evaluate(() => (window as unknown as { stayed?: boolean }).stayed)).toBe(true);
    await browser.shot('02-environments');
  });

  it('charts the last hour of samples on the environment page', async () => {
    const { page } = browser;
    await page.getByRole('link', { name: 'Build farm' }).click();
    await page.getByRole('heading', { name: 'Build farm' }).waitFor();
    await page.locator('.chart .uplot canvas').waitFor();
    await browser.shot('03-environment');
    // 60 samples, or 59 when a minute has turned since they were written (the window slides).
    const summary = page.getByText(/Samples as a table \((59|60)\)/);
    const shown = Number(/\((\d+)\)/.exec((await summary.textContent())!)![1]);
    await summary.click();
    const rows = page.getByRole('table', { name: 'Queue samples, oldest first' }).locator('tbody tr');
    expect(await rows.count()).toBe(shown);
  });

  it('opens an item worked by a worker and shows its lifecycle as a timeline', async () => {
    const base = `/v1/environments/${envId}/work`;
    const polled = await api<{ id: string }>('GET', `${base}/poll`, undefined, envKey);
    await api('POST', `${base}/${polled.id}/ack`, undefined, envKey);
    await api(
      'POST',
      `${base}/${polled.id}/heartbeat?expected_last_heartbeat=NO_HEARTBEAT`,
      undefined,
      envKey,
    );

    const { page } = browser;
    await page.reload();
    await page.getByLabel('State').selectOption('active');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByRole('link', { name: polled.id }).click();
    await page.getByRole('heading', { name: 'Timeline' }).waitFor();
    const timeline = page.getByRole('list', { name: 'Lifecycle' });
    for (const step of ['Created', 'Acknowledged', 'Started', 'Heartbeats']) {
      await expect.poll(() => timeline.locator('li.done', { hasText: step }).count()).toBe(1);
    }
    expect(await timeline.locator('li.pending', { hasText: 'Stopped' }).count()).toBe(1);
    expect(await timeline.locator('li', { hasText: 'Heartbeats' }).textContent()).toContain('1 accepted');
    expect(await page.locator('dl.facts').textContent()).toContain('heartbeat lease until');
    await browser.shot('04-work-item');
  });

  it('stops the item after asking, and the timeline shows the stop request', async () => {
    const { page } = browser;
    await page.getByRole('link', { name: 'Stop…' }).click();
    await page.getByRole('heading', { name: 'Stop this work item?' }).waitFor();
    await browser.shot('05-stop-confirm');
    await page.getByRole('button', { name: 'Stop the item' }).click();
    await page.getByRole('status').filter({ hasText: 'Stop requested' }).waitFor();
    expect(await page.locator('.badge').first().textContent()).toBe('stopping');
    const timeline = page.getByRole('list', { name: 'Lifecycle' });
    expect(await timeline.locator('li.done', { hasText: 'Stop requested' }).count()).toBe(1);
    await browser.shot('06-work-item-stopping');
  });

  it('opens a journal: the check report highlights the violation, the step marks fences and interruptions', async () => {
    const { page } = browser;
    await page.getByRole('link', { name: 'Journals' }).click();
    await page.getByLabel('Run id').fill(RUN);
    await page.getByRole('button', { name: 'Check run' }).click();
    await page.getByText('violations found').waitFor();
    const broken = page.locator('tr.violation', { hasText: 'broken' });
    expect(await broken.textContent()).toContain('invariant 4');
    expect(await page.locator('tr.violation', { hasText: 'agent' }).count()).toBe(0);
    await browser.shot('07-journal-check');

    await page.getByRole('link', { name: 'agent' }).click();
    await page.getByRole('heading', { name: 'Records' }).waitFor();
    const rows = page.locator('tbody tr');
    expect(await rows.count()).toBe(5);
    expect(await rows.nth(0).textContent()).toMatch(/claim.*fenced by seq 3/s);
    expect(await rows.nth(1).textContent()).toContain('written under a fenced claim');
    expect(await rows.nth(3).textContent()).toContain('interrupted');
    await browser.shot('08-journal-step');
  });

  it('fits a narrow screen: the page never scrolls sideways, wide tables scroll in their own region', async () => {
    const { page } = browser;
    await page.setViewportSize({ width: 360, height: 780 });
    for (const [path, name] of [
      ['/console', '09-narrow-environments'],
      [`/console/environments/${envId}`, '10-narrow-environment'],
    ] as const) {
      await page.goto(`${server.baseURL}${path}`);
      const overflow = await page.evaluate(
        () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
      );
      expect(overflow, path).toBeLessThanOrEqual(0);
      await browser.shot(name);
    }
  });

  it('is usable from the keyboard: the skip link comes first and every field has a label', async () => {
    const { page } = browser;
    await page.goto(`${server.baseURL}/console/environments/${envId}`);
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    const unlabelled = await page.evaluate(() =>
      [...document.querySelectorAll('input:not([type=hidden]), select')]
        .filter((el) => (el as HTMLInputElement).labels?.length === 0)
        .map((el) => el.outerHTML),
    );
    expect(unlabelled).toEqual([]);
  });

  it('made no request to any host but the app', () => {
    const origins = new Set(browser.requests.map((u) => new URL(u).origin));
    expect([...origins].filter((o) => o !== 'null')).toEqual([server.baseURL]);
    expect(browser.requests.length).toBeGreaterThan(10);
  });
});
