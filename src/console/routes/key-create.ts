import type { Hono } from 'hono';
import { html } from 'hono/html';
import { readForm } from '../../api/body.js';
import type { AppEnv } from '../../api/types.js';
import { operator } from '../context.js';
import { seg } from '../internal-api.js';
import { type ConfirmOptions, confirmPage } from '../pages/confirm.js';
import { keyIssuedPage } from '../pages/key-issued.js';
import { assertSameOrigin, CONSOLE_BASE } from '../session.js';
import { envHref, orAsk } from './ask.js';

const NEW_KEY = `${CONSOLE_BASE}/environments/:environmentId/keys/new`;
const KEYS = `${CONSOLE_BASE}/environments/:environmentId/keys`;

/** GET /console/environments/{id}/keys/new, POST …/keys — create an environment key; its secret is shown once. */
export function registerKeyCreate(app: Hono<AppEnv>): void {
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
}
