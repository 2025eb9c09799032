/**
 * The operator's actions. Each is a pair: a GET page that says what will happen and asks, and
 * a POST (from that page only: same origin) that does it through the API and redirects to a
 * page showing the outcome. A refused action re-renders its question with the API's reason.
 */
import type { Context, Hono } from 'hono';
import { html } from 'hono/html';
import { readForm } from '../api/body.js';
import { ApiError, notFound } from '../api/errors.js';
import type { AppEnv } from '../api/types.js';
import { inspectWork } from '../queue/index.js';
import { type Operator, operator } from './context.js';
import { consoleHref } from './html.js';
import { seg } from './internal-api.js';
import { type ConfirmOptions, confirmPage } from './pages/confirm.js';
import { keyIssuedPage } from './pages/key-issued.js';
import { assertSameOrigin, CONSOLE_BASE } from './session.js';

const WORK = `${CONSOLE_BASE}/work/:workId/stop`;
const SESSION = `${CONSOLE_BASE}/sessions/:sessionId/cancel`;
const NEW_KEY = `${CONSOLE_BASE}/environments/:environmentId/keys/new`;
const KEYS = `${CONSOLE_BASE}/environments/:environmentId/keys`;
const REVOKE = `${CONSOLE_BASE}/environments/:environmentId/keys/:keyId/revoke`;

const envHref = (id: string, query: Record<string, string> = {}) =>
  consoleHref(`/environments/${encodeURIComponent(id)}`, query);
const workHref = (id: string, query: Record<string, string> = {}) =>
  consoleHref(`/work/${encodeURIComponent(id)}`, query);

/** Runs `act`; an API refusal (4xx) re-asks with its reason instead of leaving the page. */
async function orAsk(
  c: Context<AppEnv>,
  ask: ConfirmOptions,
  act: () => Promise<Response>,
): Promise<Response> {
  try {
    return await act();
  } catch (err) {
    if (err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 401)
      return c.html(confirmPage({ ...ask, error: err.message }), err.status as 400);
    throw err;
  }
}

async function stopQuestion(op: Operator, workId: string) {
  const item = await inspectWork(op.db, workId);
  if (item?.lane !== 'poll') throw notFound('work item not found (only items a worker polls can be stopped)');
  const ask: ConfirmOptions = {
    title: 'Stop this work item?',
    question: html`Item <code>${item.id}</code> (${item.kind}, now <strong>${item.state}</strong>) ${
      item.sessionId === null
        ? html`— healthcheck <code>${item.healthcheckId}</code>`
        : html`of session <code>${item.sessionId}</code>`
    }.`,
    action: `${CONSOLE_BASE}/work/${encodeURIComponent(item.id)}/stop`,
    fields: html`<fieldset><legend>How</legend>
<label><input type="radio" name="mode" value="graceful" checked> Gracefully: its worker finishes up and stops it</label>
<label><input type="radio" name="mode" value="force"> At once (force): stopped now, the worker is refused from its next call</label>
</fieldset>`,
    confirmLabel: 'Stop the item',
    cancelHref: workHref(item.id),
    danger: true,
  };
  return { item, ask };
}

export function registerActions(app: Hono<AppEnv>): void {
  app.get(WORK, async (c) => {
    const { ask } = await stopQuestion(await operator(app, c), c.req.param('workId'));
    return c.html(confirmPage(ask));
  });
  app.post(WORK, async (c) => {
    assertSameOrigin(c);
    const op = await operator(app, c);
    const { item, ask } = await stopQuestion(op, c.req.param('workId'));
    const force = (await readForm(c)).get('mode') === 'force';
    return orAsk(c, ask, async () => {
      await op.api('POST', `/v1/environments/${seg(item.environmentId)}/work/${seg(item.id)}/stop`, {
        force,
      });
      const done = force || item.state !== 'active' ? 'stopped' : 'stop-requested';
      return c.redirect(workHref(item.id, { done }), 303);
    });
  });

  const cancelAsk = (c: Context<AppEnv>): ConfirmOptions => {
    const sessionId = c.req.param('sessionId') ?? '';
    const from = c.req.query('from');
    return {
      title: 'Cancel this session?',
      question: html`Every item of session <code>${sessionId}</code> still in flight — queued, running or winding down, of any kind — is stopped now. New work can be enqueued for it later.`,
      action: consoleHref(`/sessions/${encodeURIComponent(sessionId)}/cancel`, { from }),
      confirmLabel: 'Cancel the session',
      cancelHref: from ? workHref(from) : CONSOLE_BASE,
      danger: true,
    };
  };
  app.get(SESSION, async (c) => {
    await operator(app, c);
    return c.html(confirmPage(cancelAsk(c)));
  });
  app.post(SESSION, async (c) => {
    assertSameOrigin(c);
    const op = await operator(app, c);
    await readForm(c);
    const from = c.req.query('from');
    return orAsk(c, cancelAsk(c), async () => {
      await op.api('POST', `/v1/platform/sessions/${seg(c.req.param('sessionId'))}/cancel`, {});
      return c.redirect(
        from ? workHref(from, { done: 'session-cancelled' }) : consoleHref('', { done: 'session-cancelled' }),
        303,
      );
    });
  });

  const newKeyAsk = (envId: string): ConfirmOptions => ({
    title: 'Create an environment key?',
    question: html`A new key lets workers poll environment <code>${envId}</code>. Its secret is shown once, on the next page.`,
    action: `${CONSOLE_BASE}/environments/${encodeURIComponent(envId)}/keys`,
    fields: html`<label for="name">Name</label><input type="text" id="name" name="name" required maxlength="256" autocomplete="off">`,
    confirmLabel: 'Create the key',
    cancelHref: envHref(envId),
  });
  app.get(NEW_KEY, async (c) => {
    await operator(app, c);
    return c.html(confirmPage(newKeyAsk(c.req.param('environmentId'))));
  });
  app.post(KEYS, async (c) => {
    assertSameOrigin(c);
    const op = await operator(app, c);
    const envId = c.req.param('environmentId');
    const name = (await readForm(c)).get('name') ?? '';
    return orAsk(c, newKeyAsk(envId), async () => {
      const key = await op.api<{ id: string; name: string; key: string }>(
        'POST',
        `/v1/environments/${seg(envId)}/keys`,
        { name },
      );
      return c.html(keyIssuedPage(envId, key), 201);
    });
  });

  const revokeAsk = (envId: string, keyId: string): ConfirmOptions => ({
    title: 'Revoke this key?',
    question: html`Workers using key <code>${keyId}</code> are refused from their next call. This cannot be undone.`,
    action: `${CONSOLE_BASE}/environments/${encodeURIComponent(envId)}/keys/${encodeURIComponent(keyId)}/revoke`,
    confirmLabel: 'Revoke the key',
    cancelHref: envHref(envId),
    danger: true,
  });
  app.get(REVOKE, async (c) => {
    await operator(app, c);
    return c.html(confirmPage(revokeAsk(c.req.param('environmentId'), c.req.param('keyId'))));
  });
  app.post(REVOKE, async (c) => {
    assertSameOrigin(c);
    const op = await operator(app, c);
    const envId = c.req.param('environmentId');
    const keyId = c.req.param('keyId');
    await readForm(c);
    return orAsk(c, revokeAsk(envId, keyId), async () => {
      await op.api('POST', `/v1/environments/${seg(envId)}/keys/${seg(keyId)}/revoke`);
      return c.redirect(envHref(envId, { done: 'key-revoked' }), 303);
    });
  });
}
