/**
 * The console's page shell and the small pieces every page shares. Everything interpolated
 * through `html` is escaped; nothing from a request or a record reaches a page any other way.
 */
import { html } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';
import { ASSET_PATHS } from './assets.js';
import { CONSOLE_BASE } from './session.js';

export type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

export interface PageOptions {
  title: string;
  /** Shown as a status message at the top (after an action). */
  notice?: string | undefined;
  /** Whether the header offers sign-out (false on the sign-in page). */
  signedIn?: boolean;
  /** Load the chart library (pages with a chart). */
  chart?: boolean;
}

export function page(options: PageOptions, body: Html): Html {
  const signedIn = options.signedIn ?? true;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>${options.title} · Leasehold console</title>
<link rel="stylesheet" href="${ASSET_PATHS.css}">
${options.chart ? html`<link rel="stylesheet" href="${ASSET_PATHS.uplotCss}"><script src="${ASSET_PATHS.uplotJs}" defer></script>` : ''}
<script src="${ASSET_PATHS.js}" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="${CONSOLE_BASE}">Leasehold</a>
  ${
    signedIn
      ? html`<nav aria-label="Console">
    <a href="${CONSOLE_BASE}">Environments</a>
    <a href="${CONSOLE_BASE}/journal">Journals</a>
  </nav>
  <form method="post" action="${CONSOLE_BASE}/sign-out" class="sign-out"><button type="submit">Sign out</button></form>`
      : ''
  }
</header>
<main id="main" tabindex="-1">
${options.notice ? html`<p class="notice" role="status">${options.notice}</p>` : ''}
${body}
</main>
</body>
</html>`;
}

/** A timestamp as the page shows it: the UTC time, with the exact stamp in a `<time>`. */
export function when(stamp: string | null | undefined): Html {
  if (!stamp) return html`<span class="none">—</span>`;
  return html`<time datetime="${stamp}">${stamp.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC')}</time>`;
}

/** A duration in ms as people read it: 850 ms, 12 s, 4 min 3 s, 2 h 5 min. */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

export function stateBadge(state: string): Html {
  return html`<span class="badge state-${state}">${state}</span>`;
}

/** A table that scrolls sideways on a narrow screen instead of squeezing its columns. */
export function table(caption: string, head: string[], rows: Html[], empty = 'Nothing here.'): Html {
  if (rows.length === 0) return html`<p class="empty">${empty}</p>`;
  return html`<div class="scroll" role="region" aria-label="${caption}" tabindex="0">
<table>
<caption>${caption}</caption>
<thead><tr>${head.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead>
<tbody>${rows}</tbody>
</table>
</div>`;
}

/** The path of a console page, with a query string built from the defined values. */
export function consoleHref(path: string, query: Record<string, string | undefined> = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, v);
  const qs = params.toString();
  return `${CONSOLE_BASE}${path}${qs ? `?${qs}` : ''}`;
}
