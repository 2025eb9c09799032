import { describe, expect, it } from 'vitest';
import { ack, enqueueHealthcheck, poll, stop } from '../../src/queue/index.js';
import { consoleSession, html } from '../helpers/console.js';
import { useTestDb } from '../helpers/db.js';
import { createEnvironment } from '../helpers/factories.js';

/** The page's healthcheck section: from its heading to the work items'. */
const section = (page: string) => page.slice(page.indexOf('id="healthchecks"'), page.indexOf('id="work"'));

describe('console: healthchecks', () => {
  const t = useTestDb('pglite');

  it('a self_hosted environment’s page says no healthcheck was answered yet, then names the one waiting', async () => {
    const environmentId = await createEnvironment(t.db, 'self_hosted');
    const s = await consoleSession(t.db);
    const path = `/console/environments/${environmentId}`;
    expect(section(await html(await s.page(path)))).toContain(
      'No healthcheck has been answered by a worker yet.',
    );

    const check = (await enqueueHealthcheck(t.db, { environmentId }))!.work;
    await poll(t.db, environmentId, 60_000);
    const waiting = section(await html(await s.page(path)));
    expect(waiting).toContain(`href="/console/work/${check.id}"`);
    expect(waiting).toContain(check.healthcheckId!);
    expect(waiting).toContain('is waiting for a worker (handed out 1 time, not acknowledged)');
  });

  it('once a worker acks and stops it, the page shows it as the last answered, with both times and its state', async () => {
    const environmentId = await createEnvironment(t.db, 'self_hosted');
    const check = (await enqueueHealthcheck(t.db, { environmentId }))!.work;
    await poll(t.db, environmentId, 60_000);
    await ack(t.db, environmentId, check.id);
    const s = await consoleSession(t.db);
    const path = `/console/environments/${environmentId}`;
    const acked = section(await html(await s.page(path)));
    expect(acked).toContain('Last answered');
    expect(acked).toContain(check.healthcheckId!);
    expect(acked).toMatch(/Stopped<\/dt><dd><span class="muted">not yet/);
    expect(acked).not.toContain('is waiting for a worker');

    const stopped = await stop(t.db, environmentId, check.id, true);
    const done = section(await html(await s.page(path)));
    expect(done).toContain(`datetime="${stopped.stoppedAt}"`);
    expect(done).toContain(`datetime="${stopped.acknowledgedAt}"`);
    expect(done).toContain('stopped');
  });

  it('a cloud environment’s page has no healthcheck section: it has no workers to answer one', async () => {
    const environmentId = await createEnvironment(t.db, 'cloud');
    const s = await consoleSession(t.db);
    expect(await html(await s.page(`/console/environments/${environmentId}`))).not.toContain(
      'id="healthchecks"',
    );
  });

  it('a healthcheck’s item page and row name the healthcheck, not a session, and offer no session cancel', async () => {
    const environmentId = await createEnvironment(t.db, 'self_hosted');
    const check = (await enqueueHealthcheck(t.db, { environmentId }))!.work;
    const s = await consoleSession(t.db);
    const item = await html(await s.page(`/console/work/${check.id}`));
    expect(item).toContain(`<dt>Healthcheck</dt><dd><code>${check.healthcheckId}</code>`);
    expect(item).not.toContain('Cancel session');
    expect(item).not.toContain('<dt>Session</dt>');
    const env = await html(await s.page(`/console/environments/${environmentId}`));
    expect(env).toContain(`healthcheck <code>${check.healthcheckId}</code>`);
    const question = await html(await s.page(`/console/work/${check.id}/stop`));
    expect(question).toContain(`healthcheck <code>${check.healthcheckId}</code>`);
    expect(question).not.toContain('of session');
  });
});
