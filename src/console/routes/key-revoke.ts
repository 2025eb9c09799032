import type { Hono } from 'hono';
import { html } from 'hono/html';
import { readForm } from '../../api/body.js';
import type { AppEnv } from '../../api/types.js';
import { operator } from '../context.js';
import { seg } from '../internal-api.js';
import { type ConfirmOptions, confirmPage } from '../pages/confirm.js';
import { assertSameOrigin, CONSOLE_BASE } from '../session.js';
import { envHref, orAsk } from './ask.js';

const REVOKE = `${CONSOLE_BASE}/environments/:environmentId/keys/:keyId/revoke`;

/** GET/POST /console/environments/{id}/keys/{keyId}/revoke — revoke an environment key. */
export function registerKeyRevoke(app: Hono<AppEnv>): void {
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
