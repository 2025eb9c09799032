import { html } from 'hono/html';
import { type Html, page } from '../html.js';
import { CONSOLE_BASE } from '../session.js';

export function errorPage(status: number, message: string, signedIn: boolean): Html {
  return page(
    { title: `Error ${status}`, signedIn },
    html`<h1>${status === 404 ? 'Not found' : `Error ${status}`}</h1>
<p class="error" role="alert">${message}</p>
<p><a href="${CONSOLE_BASE}">Back to environments</a></p>`,
  );
}
