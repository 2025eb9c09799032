import type { Hono } from 'hono';
import { html } from 'hono/html';
import { readForm } from '../../api/body.js';
import { notFound } from '../../api/errors.js';
import type { AppEnv } from '../../api/types.js';
import { inspectWork } from '../../queue/index.js';
import { type Operator, operator } from '../context.js';
import { seg } from '../internal-api.js';
import { type ConfirmOptions, confirmPage } from '../pages/confirm.js';
import { assertSameOrigin, CONSOLE_BASE } from '../session.js';
import { orAsk, workHref } from './ask.js';

const WORK = `${CONSOLE_BASE}/work/:workId/stop`;

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

/** GET/POST /console/work/{id}/stop — stop a poll-lane item, gracefully or at once. */
export function registerWorkStop(app: Hono<AppEnv>): void {
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
}
