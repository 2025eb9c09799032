/**
 * What the operator's actions share. Each is a pair: a GET page that says what will happen and
 * asks, and a POST (from that page only: same origin) that does it through the API and
 * redirects to a page showing the outcome. A refused action re-renders its question with the
 * API's reason.
 */
import type { Context } from 'hono';
import { ApiError } from '../../api/errors.js';
import type { AppEnv } from '../../api/types.js';
import { consoleHref } from '../html.js';
import { type ConfirmOptions, confirmPage } from '../pages/confirm.js';

export const envHref = (id: string, query: Record<string, string> = {}) =>
  consoleHref(`/environments/${encodeURIComponent(id)}`, query);
export const workHref = (id: string, query: Record<string, string> = {}) =>
  consoleHref(`/work/${encodeURIComponent(id)}`, query);

/** Runs `act`; an API refusal (4xx) re-asks with its reason instead of leaving the page. */
export async function orAsk(
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
