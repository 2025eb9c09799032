import { html } from 'hono/html';
import { type Html, page } from '../html.js';

export interface ConfirmOptions {
  title: string;
  /** What will happen, in a sentence or two. */
  question: Html | string;
  action: string;
  /** Extra fields of the form (choices such as graceful/force). */
  fields?: Html;
  confirmLabel: string;
  cancelHref: string;
  danger?: boolean;
  error?: string | undefined;
}

/** Every action asks first: a page whose form does the act, and a way back that does nothing. */
export function confirmPage(o: ConfirmOptions): Html {
  return page(
    { title: o.title },
    html`<h1>${o.title}</h1>
${o.error ? html`<p class="error" role="alert">${o.error}</p>` : ''}
<form method="post" action="${o.action}">
  <p>${o.question}</p>
  ${o.fields ?? ''}
  <div class="actions">
    <button type="submit" class="${o.danger ? 'danger' : ''}">${o.confirmLabel}</button>
    <a class="button secondary" href="${o.cancelHref}">Cancel</a>
  </div>
</form>`,
  );
}
