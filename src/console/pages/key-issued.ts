import { html } from 'hono/html';
import { consoleHref, type Html, page } from '../html.js';

/** The secret of a new environment key: on this page once, never stored, never shown again. */
export function keyIssuedPage(envId: string, key: { id: string; name: string; key: string }): Html {
  return page(
    { title: 'Key created' },
    html`<h1>Environment key created</h1>
<p class="notice" role="status">Copy the secret now: it is shown only on this page and cannot be read again.</p>
<dl class="facts"><dt>Name</dt><dd>${key.name}</dd><dt>Key id</dt><dd><code>${key.id}</code></dd></dl>
<label for="secret">Secret</label>
<input class="secret" id="secret" type="text" readonly value="${key.key}" data-secret spellcheck="false" autocomplete="off">
<p class="actions"><a class="button secondary" href="${consoleHref(`/environments/${encodeURIComponent(envId)}`)}#keys">Done</a></p>`,
  );
}
