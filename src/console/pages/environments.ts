import { html } from 'hono/html';
import type { EnvironmentSummary } from '../../queue/index.js';
import type { Figures } from '../figures.js';
import { consoleHref, duration, type Html, page, table } from '../html.js';

export interface EnvironmentRow {
  id: string;
  name: string;
  kind: string;
  archivedAt: string | null;
  summary: EnvironmentSummary | undefined;
}

/** A figure cell the client script keeps current (`data-live-env` + `data-field`). */
function liveCell(envId: string, field: keyof Figures, text: string): Html {
  return html`<td class="num" data-live-env="${envId}" data-field="${field}">${text}</td>`;
}

export function environmentsPage(rows: EnvironmentRow[], nextPage: string | null, archived: boolean): Html {
  const body = rows.map((e) => {
    const s = e.summary;
    return html`<tr>
<th scope="row"><a href="${consoleHref(`/environments/${encodeURIComponent(e.id)}`)}">${e.name}</a><br><code class="muted">${e.id}</code></th>
<td>${e.kind}${e.archivedAt ? html` <span class="badge">archived</span>` : ''}</td>
${liveCell(e.id, 'depth', String(s?.depth ?? 0))}
${liveCell(e.id, 'pending', String(s?.pending ?? 0))}
${liveCell(e.id, 'oldestQueuedAge', duration(s?.oldestQueuedMs))}
${liveCell(e.id, 'workersPolling', String(s?.workersPolling ?? 0))}
${liveCell(e.id, 'claimQueued', String(s?.claimQueued ?? 0))}
</tr>`;
  });
  return page(
    { title: 'Environments' },
    html`<h1>Environments</h1>
<p class="muted"><span data-live-stamp>Figures as of page load</span>. Depth: queued items a worker can take now;
pending: queued items reserved by a poll; oldest: the oldest queued item's age; workers: distinct workers
that polled in the last 30 s; claim queued: items waiting for the platform (claim lane).</p>
${table(
  'Environments and their queues',
  ['Environment', 'Kind', 'Depth', 'Pending', 'Oldest queued', 'Workers polling', 'Claim queued'],
  body,
  'No environments yet. Create one with the API or `leasehold env create`.',
)}
<p class="actions">
${nextPage ? html`<a class="button secondary" href="${consoleHref('', { page: nextPage, archived: archived ? 'true' : undefined })}">Next page</a>` : ''}
<a href="${consoleHref('', { archived: archived ? undefined : 'true' })}">${archived ? 'Hide archived' : 'Show archived'}</a>
</p>`,
  );
}
