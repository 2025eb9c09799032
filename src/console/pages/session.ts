import { html } from 'hono/html';
import type { BrowsedWork } from '../../queue/index.js';
import { consoleHref, type Html, page, stateBadge, table, when } from '../html.js';

/** The session as the API answers it (the fields the page shows). */
export interface SessionFacts {
  id: string;
  environment_id: string;
  status: string;
  title: string | null;
  agent: { id: string; name: string; version: number; model: { id: string } };
  usage: { input_tokens: number; output_tokens: number };
  stats: { active_seconds: number; duration_seconds: number };
  created_at: string;
}

export interface SessionEventRow {
  id: string;
  type: string;
  processed_at: string;
  [field: string]: unknown;
}

export interface SessionView {
  /** Null for a session the platform lane opened: no agent, no log of its own here. */
  session: SessionFacts | null;
  sessionId: string;
  environmentId: string;
  events: SessionEventRow[];
  /** More events exist past the ones shown. */
  truncated: boolean;
  items: BrowsedWork[];
}

/** One line of what an event says: text, a call and its input, a result, a stop reason. */
function summary(e: SessionEventRow): string {
  const text = (blocks: unknown) =>
    Array.isArray(blocks)
      ? blocks
          .map((b) =>
            b && typeof b === 'object' && 'text' in b
              ? String((b as { text: unknown }).text)
              : `[${(b as { type?: string })?.type ?? 'block'}]`,
          )
          .join(' ')
      : '';
  switch (e.type) {
    case 'user.message':
    case 'agent.message':
      return text(e.content);
    case 'agent.tool_use':
    case 'agent.custom_tool_use':
      return `${String(e.name)}(${JSON.stringify(e.input)})${e.evaluated_permission ? ` — ${String(e.evaluated_permission)}` : ''}`;
    case 'user.tool_result':
    case 'user.custom_tool_result':
      return `${e.is_error ? 'error: ' : ''}${text(e.content)}`;
    case 'user.tool_confirmation':
      return `${String(e.result)} ${String(e.tool_use_id)}`;
    case 'session.status_idle': {
      const reason = e.stop_reason as { type?: string; event_ids?: string[] } | undefined;
      return reason?.event_ids
        ? `${reason.type}: ${reason.event_ids.join(', ')}`
        : String(reason?.type ?? '');
    }
    case 'session.error':
      return String((e.error as { message?: string } | undefined)?.message ?? '');
    default:
      return '';
  }
}

const clip = (s: string) => (s.length > 300 ? `${s.slice(0, 300)}…` : s);

function facts(s: SessionFacts): Html {
  return html`<dl class="facts">
<dt>Status</dt><dd>${stateBadge(s.status)}</dd>
${s.title ? html`<dt>Title</dt><dd>${s.title}</dd>` : ''}
<dt>Agent</dt><dd>${s.agent.name} <span class="muted">(<code>${s.agent.id}</code> version ${s.agent.version}, model <code>${s.agent.model.id}</code>)</span></dd>
<dt>Usage</dt><dd>${s.usage.input_tokens} input, ${s.usage.output_tokens} output tokens; ${s.stats.active_seconds.toFixed(1)} s running</dd>
<dt>Created</dt><dd>${when(s.created_at)}</dd>
<dt>Journal</dt><dd><a href="${consoleHref('/journal', { run: s.id })}">check the brain’s journal of this session</a></dd>
</dl>`;
}

export function sessionPage(v: SessionView): Html {
  const env = `/environments/${encodeURIComponent(v.environmentId)}`;
  return page(
    { title: `Session ${v.sessionId}` },
    html`<p><a href="${consoleHref('')}">Environments</a> › <a href="${consoleHref(env)}">${v.environmentId}</a> ›</p>
<h1>Session <code>${v.sessionId}</code></h1>
${v.session ? facts(v.session) : html`<p>Opened by the platform lane: its agent and its log are the platform’s own.</p>`}

<h2>Events</h2>
${table(
  `Events of session ${v.sessionId}, oldest first`,
  ['#', 'Time', 'Type', 'What'],
  v.events.map(
    (
      e,
      i,
    ) => html`<tr class="event ${e.type.split('.')[0]}"><td class="num">${i + 1}</td><td>${when(e.processed_at)}</td>
<th scope="row"><code>${e.type}</code></th><td>${clip(summary(e))}</td></tr>`,
  ),
  'No events yet.',
)}
${v.truncated ? html`<p class="muted">Only the first ${v.events.length} events are shown.</p>` : ''}

<h2>Work items</h2>
${table(
  `Work items of session ${v.sessionId}, newest first`,
  ['Item', 'Kind', 'State', 'Created', 'Claims'],
  v.items.map(
    (
      o,
    ) => html`<tr><th scope="row"><a href="${consoleHref(`/work/${encodeURIComponent(o.id)}`)}"><code>${o.id}</code></a></th>
<td>${o.kind}</td><td>${stateBadge(o.state)}</td><td>${when(o.createdAt)}</td><td class="num">${o.claims}</td></tr>`,
  ),
  'No work items.',
)}`,
  );
}
