import { html } from 'hono/html';
import type { BrowsedWork } from '../../queue/index.js';
import { consoleHref, duration, type Html, page, stateBadge, table, when } from '../html.js';

export interface WorkItemView {
  item: BrowsedWork;
  sessionItems: BrowsedWork[];
  notice?: string | undefined;
}

/** The lifecycle in order; a step not reached yet is shown hollow. */
function timeline(w: BrowsedWork): Html {
  const steps: [string, string | null, string][] = [
    ['Created', w.createdAt, w.sessionId === null ? 'healthcheck asked for' : 'enqueued for its session'],
    ['Acknowledged', w.acknowledgedAt, 'a worker took it (startup lease)'],
    ['Started', w.startedAt, 'first heartbeat'],
    [
      'Heartbeats',
      w.lastHeartbeat,
      `${w.heartbeats} accepted from its current holder; the time is the latest`,
    ],
    ['Stop requested', w.stopRequestedAt, 'graceful or forced stop asked for'],
    ['Stopped', w.stoppedAt, 'done: it will not run again'],
  ];
  return html`<ol class="timeline" aria-label="Lifecycle">${steps.map(([label, at, what]) => {
    const since = at && label !== 'Created' ? sinceCreated(w.createdAt, at) : null;
    const after = since === null ? '' : html` <span class="muted">(+${since})</span>`;
    return html`<li class="${at ? 'done' : 'pending'}"><span class="step">${label}</span>
${at ? html`${when(at)}${after}` : html`<span class="muted">not yet</span>`}<br><span class="muted">${what}</span></li>`;
  })}</ol>`;
}

/** How long after creation a step came, from the two database stamps (no clock is read). */
function sinceCreated(createdAt: string, at: string): string {
  return duration(Date.parse(at) - Date.parse(createdAt));
}

function leaseText(w: BrowsedWork): string {
  if (!w.leaseExpiresAt) return 'none';
  const what =
    w.lane === 'claim'
      ? 'lease'
      : ((
          {
            queued: 'poll reservation',
            starting: 'startup lease',
            active: 'heartbeat lease',
            stopping: 'wind-down lease',
          } as Record<string, string>
        )[w.state] ?? 'lease');
  return `${what} ${w.leaseLive ? 'until' : 'lapsed at'}`;
}

export function workItemPage(v: WorkItemView): Html {
  const w = v.item;
  const env = `/environments/${encodeURIComponent(w.environmentId)}`;
  const self = `/work/${encodeURIComponent(w.id)}`;
  const metadata = Object.entries(w.metadata);
  const canStop = w.lane === 'poll' && w.state !== 'stopped';
  return page(
    { title: `Work ${w.id}`, notice: v.notice },
    html`<p><a href="${consoleHref('')}">Environments</a> › <a href="${consoleHref(env)}">${w.environmentId}</a> ›</p>
<h1>Work item <code>${w.id}</code></h1>
<dl class="facts">
<dt>State</dt><dd>${stateBadge(w.state)}</dd>
<dt>Kind</dt><dd>${w.kind} <span class="muted">(${w.lane} lane)</span></dd>
<dt>Environment</dt><dd><a href="${consoleHref(env)}"><code>${w.environmentId}</code></a></dd>
${
  w.sessionId === null
    ? html`<dt>Healthcheck</dt><dd><code>${w.healthcheckId}</code> <span class="muted">(probes the environment’s workers; no session)</span></dd>`
    : html`<dt>Session</dt><dd><a href="${consoleHref(`/sessions/${encodeURIComponent(w.sessionId)}`)}"><code>${w.sessionId}</code></a></dd>`
}
<dt>Claims</dt><dd>${w.claims} <span class="muted">(times handed out)</span></dd>
<dt>Lease</dt><dd>${leaseText(w)} ${w.leaseExpiresAt ? when(w.leaseExpiresAt) : ''}</dd>
<dt>Last change</dt><dd>${when(w.updatedAt)}</dd>
${w.traceContext?.traceparent ? html`<dt>Trace</dt><dd><code>${w.traceContext.traceparent}</code></dd>` : ''}
</dl>
<div class="actions">
${canStop ? html`<a class="button" href="${consoleHref(`${self}/stop`)}">Stop…</a>` : ''}
${w.sessionId === null ? '' : html`<a class="button secondary" href="${consoleHref(`/sessions/${encodeURIComponent(w.sessionId)}/cancel`, { from: w.id })}">Cancel session…</a>`}
</div>

<h2>Timeline</h2>
${timeline(w)}

<h2>Metadata</h2>
${table(
  'Metadata',
  ['Key', 'Value'],
  metadata.map(
    ([k, val]) => html`<tr><th scope="row"><code>${k}</code></th><td><code>${val}</code></td></tr>`,
  ),
  'No metadata.',
)}

${
  w.sessionId === null
    ? ''
    : html`<h2>The session’s other items</h2>
${table(
  `Other items of session ${w.sessionId}, newest first`,
  ['Item', 'Kind', 'State', 'Created', 'Claims'],
  v.sessionItems
    .filter((o) => o.id !== w.id)
    .map(
      (
        o,
      ) => html`<tr><th scope="row"><a href="${consoleHref(`/work/${encodeURIComponent(o.id)}`)}"><code>${o.id}</code></a></th>
<td>${o.kind}</td><td>${stateBadge(o.state)}</td><td>${when(o.createdAt)}</td><td class="num">${o.claims}</td></tr>`,
    ),
  'No other items.',
)}`
}`,
  );
}
