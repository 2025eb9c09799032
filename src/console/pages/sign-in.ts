import { html } from 'hono/html';
import { type Html, page } from '../html.js';
import { CONSOLE_BASE } from '../session.js';

/** The key goes in a POST body, never a URL; the field is a password field the page never fills. */
export function signInPage(error?: string): Html {
  return page(
    { title: 'Sign in', signedIn: false },
    html`<h1>Sign in to the console</h1>
<p>Use an <strong>admin API key</strong>. The browser keeps it for this session only.</p>
${error ? html`<p class="error" role="alert" id="sign-in-error">${error}</p>` : ''}
<form method="post" action="${CONSOLE_BASE}/sign-in">
  <label for="key">Admin API key</label>
  <input type="password" id="key" name="key" required autocomplete="off" spellcheck="false"
    ${error ? html`aria-describedby="sign-in-error" aria-invalid="true"` : ''}>
  <div class="actions"><button type="submit">Sign in</button></div>
</form>`,
  );
}
