import type { Context, Hono } from 'hono';
import { html } from 'hono/html';
import { readForm } from '../../api/body.js';
import type { AppEnv } from '../../api/types.js';
import { operator } from '../context.js';
import { consoleHref } from '../html.js';
import { seg } from '../internal-api.js';
import { type ConfirmOptions, confirmPage } from '../pages/confirm.js';
import { assertSameOrigin, CONSOLE_BASE } from '../session.js';
import { orAsk, workHref } from './ask.js';

const SESSION = `${CONSOLE_BASE}/sessions/:sessionId/cancel`;

/** GET/POST /console/sessions/{id}/cancel — stop everything a session has in flight. */
export function registerSessionCancel(app: Hono<AppEnv>): void {
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
}
