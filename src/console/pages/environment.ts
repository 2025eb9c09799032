import { html } from 'hono/html';
import {
  type BrowsedWork,
  type EnvironmentHealthchecks,
  type EnvironmentSummary,
  type QueueSample,
  WORK_KINDS,
  WORK_STATES,
} from '../../queue/index.js';
import type { Figures } from '../figures.js';
import { consoleHref, duration, type Html, page, stateBadge, table, when } from '../html.js';

export interface EnvironmentView {
  id: string;
  name: string;
  kind: string;
  archivedAt: string | null;
  summary: EnvironmentSummary;
  samples: QueueSample[];
  keys: { id: string; name: string; created_at: string; expires_at: string | null }[] | null;
  /** Self_hosted environments only (a cloud one has no workers to probe). */
  healthchecks: EnvironmentHealthchecks | null;
  items: BrowsedWork[];
  filter: { state?: string | undefined; kind?: string | undefined };
  nextPage: string | null;
  notice?: string | undefined;
}

const envPath = (id: string) => `/environments/${encodeURIComponent(id)}`;

function figure(envId: string, label: string, field: keyof Figures, text: string): Html {
  return html`<div><dt>${label}</dt><dd data-live-env="${envId}" data-field="${field}">${text}</dd></div>`;
}

function options(values: readonly string[], selected: string | undefined, all: string): Html {
  return html`<option value="">${all}</option>${values.map(
    (v) => html`<option value="${v}"${v === selected ? ' selected' : ''}>${v}</option>`,
  )}`;
}

export function environmentPage(v: EnvironmentView): Html {
  const s = v.summary;
  const path = envPath(v.id);
  const samplesUrl = consoleHref(`/live${path}/samples`);
  return page(
    { title: v.name, chart: true, notice: v.notice },
    html`<p><a href="${consoleHref('')}">Environments</a> ›</p>
<h1>${v.name}</h1>
<p><code>${v.id}</code> · ${v.kind}${v.archivedAt ? html` · archived ${when(v.archivedAt)}` : ''}</p>

<h2 id="queue">Queue</h2>
<p class="muted" data-live-stamp>Figures as of page load</p>
<dl class="figures">
${figure(v.id, 'Depth', 'depth', String(s.depth))}
${figure(v.id, 'Pending', 'pending', String(s.pending))}
${figure(v.id, 'Oldest queued', 'oldestQueuedAge', duration(s.oldestQueuedMs))}
${figure(v.id, 'Workers polling', 'workersPolling', String(s.workersPolling))}
${figure(v.id, 'Claim queued', 'claimQueued', String(s.claimQueued))}
${figure(v.id, 'Claim leased', 'claimLeased', String(s.claimLeased))}
</dl>
<figure>
<div class="chart" data-chart data-samples-url="${samplesUrl}" role="img"
  aria-label="Depth, pending and claim-queued items over the last hour, one sample a minute">
  <p class="muted">The chart needs JavaScript; the samples are in the table below.</p>
</div>
<figcaption class="muted">Last hour, sampled each minute by housekeeping; the last point is live.</figcaption>
</figure>
<details>
<summary>Samples as a table (${v.samples.length})</summary>
${table(
  'Queue samples, oldest first',
  ['Minute', 'Depth', 'Pending', 'Workers', 'Claim queued'],
  v.samples.map(
    (x) =>
      html`<tr><td>${when(x.minute)}</td><td class="num">${x.depth}</td><td class="num">${x.pending}</td><td class="num">${x.workersPolling}</td><td class="num">${x.claimQueued}</td></tr>`,
  ),
  'No samples in the last hour: housekeeping has not run since.',
)}
</details>

${v.keys === null ? '' : keysSection(v.id, v.keys, v.archivedAt !== null)}
${v.healthchecks === null ? '' : healthcheckSection(v.healthchecks)}

<h2 id="work">Work items</h2>
<form class="filters" method="get" action="${consoleHref(path)}">
  <div><label for="state">State</label><select id="state" name="state">${options(WORK_STATES, v.filter.state, 'Any state')}</select></div>
  <div><label for="kind">Kind</label><select id="kind" name="kind">${options(WORK_KINDS, v.filter.kind, 'Any kind')}</select></div>
  <div><button type="submit">Filter</button></div>
</form>
${table(
  'Work items, newest first',
  ['Item', 'Kind', 'State', 'For', 'Created', 'Claims'],
  v.items.map(
    (w) => html`<tr>
<th scope="row"><a href="${consoleHref(`/work/${encodeURIComponent(w.id)}`)}"><code>${w.id}</code></a></th>
<td>${w.kind} <span class="muted">(${w.lane})</span></td>
<td>${stateBadge(w.state)}</td>
<td>${w.sessionId === null ? html`healthcheck <code>${w.healthcheckId}</code>` : html`session <code>${w.sessionId}</code>`}</td>
<td>${when(w.createdAt)}</td>
<td class="num">${w.claims}</td>
</tr>`,
  ),
  'No work items match.',
)}
${v.nextPage ? html`<p class="actions"><a class="button secondary" href="${consoleHref(path, { ...v.filter, page: v.nextPage })}">Older items</a></p>` : ''}`,
  );
}

function keysSection(envId: string, keys: NonNullable<EnvironmentView['keys']>, archived: boolean): Html {
  const path = envPath(envId);
  return html`<h2 id="keys">Environment keys</h2>
${table(
  'Live environment keys',
  ['Name', 'Key id', 'Created', 'Expires', ''],
  keys.map(
    (
      k,
    ) => html`<tr><th scope="row">${k.name}</th><td><code>${k.id}</code></td><td>${when(k.created_at)}</td><td>${when(k.expires_at)}</td>
<td><a href="${consoleHref(`${path}/keys/${encodeURIComponent(k.id)}/revoke`)}">Revoke…</a></td></tr>`,
  ),
  'No live keys: workers of this environment cannot poll.',
)}
${archived ? '' : html`<p class="actions"><a class="button secondary" href="${consoleHref(`${path}/keys/new`)}">Create a key…</a></p>`}`;
}

/** The last healthcheck a worker answered (acknowledged), and the one still waiting for a worker. */
function healthcheckSection(h: EnvironmentHealthchecks): Html {
  const link = (id: string, text: Html) =>
    html`<a href="${consoleHref(`/work/${encodeURIComponent(id)}`)}">${text}</a>`;
  const a = h.answered;
  const answered = a
    ? html`<dl class="facts">
<dt>Last answered</dt><dd>${link(a.id, html`<code>${a.healthcheckId}</code>`)} ${stateBadge(a.state)}</dd>
<dt>Acknowledged</dt><dd>${when(a.acknowledgedAt)} <span class="muted">(a worker took it)</span></dd>
<dt>Stopped</dt><dd>${a.stoppedAt ? when(a.stoppedAt) : html`<span class="muted">not yet</span>`}</dd>
</dl>`
    : html`<p>No healthcheck has been answered by a worker yet.</p>`;
  const w = h.waiting;
  const waiting = w
    ? html`<p>Healthcheck ${link(w.id, html`<code>${w.healthcheckId}</code>`)}, asked for ${when(w.createdAt)}, is waiting for a worker${w.claims > 0 ? html` (handed out ${w.claims} ${w.claims === 1 ? 'time' : 'times'}, not acknowledged)` : ''}.</p>`
    : '';
  return html`<h2 id="healthchecks">Healthcheck</h2>
${answered}
${waiting}`;
}
