import { html } from 'hono/html';
import type { WireRecord, WireReport } from '../../api/routes/journal-wire.js';
import { compareRank, identityKey, type Json } from '../../journal/index.js';
import { consoleHref, type Html, page, table, when } from '../html.js';

const stepHref = (run: string, step: string) =>
  consoleHref(`/journal/${encodeURIComponent(run)}/${encodeURIComponent(step)}`);

function runForm(run: string | undefined): Html {
  return html`<form class="filters" method="get" action="${consoleHref('/journal')}">
<div><label for="run">Run id</label><input type="text" id="run" name="run" value="${run ?? ''}" required pattern="[A-Za-z0-9_\\-]{1,128}" spellcheck="false"></div>
<div><button type="submit">Check run</button></div>
</form>`;
}

function violations(list: string[]): Html {
  if (list.length === 0) return html`<span class="muted">no violations</span>`;
  return html`<ul>${list.map((v) => html`<li class="violation">${v}</li>`)}</ul>`;
}

/** A run's check() report: every step with its counts, violations highlighted. */
export function journalRunPage(run: string | undefined, report: WireReport | null, error?: string): Html {
  const body = report
    ? html`<h2>Run <code>${report.run_id}</code>: ${report.ok ? 'no violations' : html`<span class="tag">violations found</span>`}</h2>
${table(
  'Steps of the run and their check results',
  ['Step', 'Records', 'Commits', 'Violations'],
  report.steps.map(
    (s) => html`<tr class="${s.violations.length ? 'violation' : ''}">
<th scope="row"><a href="${stepHref(report.run_id, s.step_id)}"><code>${s.step_id}</code></a></th>
<td class="num">${s.records}</td><td class="num">${s.commits}</td><td>${violations(s.violations)}</td></tr>`,
  ),
  'This run has no journal.',
)}
<p class="muted">Not checked: ${report.skipped.join('; ')}</p>`
    : '';
  return page(
    { title: run ? `Journal ${run}` : 'Journals' },
    html`<h1>Journals</h1>
<p>Each agent step keeps an append-only journal. Enter a run to check all its steps against the journal invariants.</p>
${runForm(run)}
${error ? html`<p class="error" role="alert">${error}</p>` : ''}
${body}`,
  );
}

export interface RecordMarks {
  /** Claims of the same iteration outranked by a later one: seq → the fencing claim's seq. */
  fencedBy: Map<number, number>;
  /** Records written under a claim that was fenced. */
  stale: Set<number>;
  /** tool.intent records with no tool.result for their key in the journal (interrupted or running). */
  unanswered: Set<number>;
}

/** What the page marks: fenced claims, stale writes, interrupted tool results, unanswered intents. */
function markRecords(records: WireRecord[]): RecordMarks {
  const identity = (r: WireRecord) =>
    identityKey({
      iteration: r.iteration,
      attempt: r.attempt,
      streamSeq: r.stream_seq,
      delivered: r.delivered,
    });
  const rank = (r: WireRecord) => ({ attempt: r.attempt, streamSeq: r.stream_seq, delivered: r.delivered });
  const claims = records.filter((r) => r.type === 'claim');
  const fencedBy = new Map<number, number>();
  const fencedIds = new Set<string>();
  for (const c of claims) {
    const newer = claims.find(
      (o) => o.iteration === c.iteration && o.seq > c.seq && compareRank(rank(o), rank(c)) > 0,
    );
    if (newer) {
      fencedBy.set(c.seq, newer.seq);
      fencedIds.add(identity(c));
    }
  }
  const stale = new Set(
    records.filter((r) => r.type !== 'claim' && fencedIds.has(identity(r))).map((r) => r.seq),
  );
  const answered = new Set(records.filter((r) => r.type === 'tool.result').map((r) => field(r.data, 'key')));
  const unanswered = new Set(
    records.filter((r) => r.type === 'tool.intent' && !answered.has(field(r.data, 'key'))).map((r) => r.seq),
  );
  return { fencedBy, stale, unanswered };
}

function tags(r: WireRecord, marks: RecordMarks): Html[] {
  const out: Html[] = [];
  const fencer = marks.fencedBy.get(r.seq);
  if (fencer !== undefined) out.push(html`<span class="tag">fenced by seq ${fencer}</span>`);
  if (marks.stale.has(r.seq)) out.push(html`<span class="tag">written under a fenced claim</span>`);
  if (r.type === 'tool.result' && field(r.data, 'interrupted'))
    out.push(html`<span class="tag">interrupted</span>`);
  if (marks.unanswered.has(r.seq)) out.push(html`<span class="tag">no result</span>`);
  return out;
}

/**
 * A field of a record body as the API sent it; undefined when the body is not an object. The
 * page reads what it is given and only displays it, so it looks rather than trusts.
 */
function field(data: Json, name: string): Json | undefined {
  return typeof data === 'object' && data !== null && !Array.isArray(data) ? data[name] : undefined;
}

function summary(r: WireRecord): string {
  const d = (name: string) => String(field(r.data, name));
  switch (r.type) {
    case 'tool.intent':
      return `${d('name')} call ${d('call')} (${d('replay')})`;
    case 'tool.result':
      return `call ${d('call')}${field(r.data, 'error') ? `: error ${d('error')}` : ''}`;
    case 'commit':
      return d('action');
    case 'model.response':
      return `call ${d('call')}`;
    default:
      return '';
  }
}

export interface StepView {
  run: string;
  step: string;
  records: WireRecord[];
  /** The cursor of the page after this one, when the step has more records. */
  nextAfter: number | null;
  stepReport: WireReport['steps'][number] | undefined;
}

/** One step's records in journal order, marked, with its part of the run's check report. */
export function journalStepPage(v: StepView): Html {
  const marks = markRecords(v.records);
  const rowClass = (r: WireRecord) => {
    if (marks.fencedBy.has(r.seq) || marks.stale.has(r.seq)) return 'fenced';
    if (r.type === 'tool.result' && field(r.data, 'interrupted')) return 'interrupted';
    return '';
  };
  return page(
    { title: `Journal ${v.run} / ${v.step}` },
    html`<p><a href="${consoleHref('/journal', { run: v.run })}">Run ${v.run}</a> ›</p>
<h1>Step <code>${v.step}</code></h1>
<h2>Check</h2>
${v.stepReport ? violations(v.stepReport.violations) : html`<p class="muted">No journal for this step.</p>`}
<h2>Records</h2>
${table(
  'Journal records in order',
  ['Seq', 'Type', 'Iteration · attempt · delivery', 'Time', 'What', 'Body'],
  v.records.map(
    (r) => html`<tr class="${rowClass(r)}">
<td class="num">${r.seq}</td>
<td><code>${r.type}</code> ${tags(r, marks)}</td>
<td>${r.iteration} · ${r.attempt} · ${r.delivered}</td>
<td>${when(r.time)}</td>
<td>${summary(r)}</td>
<td><details><summary>body</summary><pre class="body">${JSON.stringify(r.data, null, 2)}</pre></details></td>
</tr>`,
  ),
  'No records.',
)}
${v.nextAfter !== null ? html`<p class="actions"><a class="button secondary" href="${consoleHref(`/journal/${encodeURIComponent(v.run)}/${encodeURIComponent(v.step)}`, { after: String(v.nextAfter) })}">Later records</a></p>` : ''}`,
  );
}
