/**
 * One probe of the isolation matrix: the request as sent, the answer as received (status,
 * every header, the body text), and the checks every answer must pass whatever its route.
 */
import type { RouteDoc } from '../../../src/api/openapi.js';
import type { TestApi } from '../../helpers/api.js';
import type { Caller } from './callers.js';
import { type Outcome, pathOf, type Target } from './matrix.js';
import type { World } from './world.js';

export interface Answer {
  status: number;
  /** Header name → value, `request-id` included. */
  headers: Record<string, string>;
  text: string;
  /** Everything sent: path, query, headers and body, for telling an echo from a leak. */
  sent: string;
  label: string;
}

export async function send(
  api: TestApi,
  w: World,
  r: RouteDoc | { method: string; path: string },
  caller: Caller,
  t: Target,
  pathOverride?: string,
): Promise<Answer> {
  const path = pathOverride ?? pathOf(r as RouteDoc, t);
  const query = [t.query, caller.query?.(w)].filter(Boolean).join('&');
  const url = query ? `${path}?${query}` : path;
  const headers = { ...caller.headers(w) };
  const body = t.body === undefined ? undefined : JSON.stringify(t.body);
  if (body !== undefined) headers['content-type'] = 'application/json';
  const method = r.method.toUpperCase();
  const res = await api.app.request(url, { method, headers, body });
  // An event stream never ends by itself: its headers are the answer, and cancelling the body
  // ends the stream server-side.
  const streaming = res.headers.get('content-type')?.startsWith('text/event-stream') === true;
  if (streaming) await res.body?.cancel();
  return {
    status: res.status,
    headers: Object.fromEntries(res.headers),
    text: streaming ? '' : await res.text(),
    sent: `${url} ${JSON.stringify(headers)} ${body ?? ''}`,
    label: `${method} ${r.path} [${t.kind}] as ${caller.name}`,
  };
}

/** The answer without what differs on every request: the request id, in header and body. */
export function comparable(a: Answer): string {
  const headers = Object.entries(a.headers)
    .filter(([k]) => k !== 'request-id')
    .sort();
  let body: unknown = a.text;
  try {
    const parsed = JSON.parse(a.text) as Record<string, unknown>;
    if (parsed && typeof parsed === 'object') delete parsed.request_id;
    body = parsed;
  } catch {
    // Not JSON: compared as text.
  }
  return JSON.stringify({ status: a.status, headers, body });
}

export interface Tally {
  probes: number;
  byOutcome: Record<Outcome, number>;
  statuses: Record<number, number>;
  comparisons: number;
  searched: number;
  failures: string[];
}

export const newTally = (): Tally => ({
  probes: 0,
  byOutcome: { refused: 0, served: 0, absent: 0, visible: 0 },
  statuses: {},
  comparisons: 0,
  searched: 0,
  failures: [],
});

/** The status and envelope an outcome allows; `missing` is the same caller's missing-id answer. */
export function checkStatus(
  tally: Tally,
  r: RouteDoc,
  a: Answer,
  outcome: Outcome,
  absentStatus: number,
  missing?: Answer,
): void {
  tally.probes++;
  tally.byOutcome[outcome]++;
  tally.statuses[a.status] = (tally.statuses[a.status] ?? 0) + 1;
  const fail = (why: string) =>
    tally.failures.push(`${a.label}: ${why} (got ${a.status} ${a.text.slice(0, 160)})`);
  if (!/^req_[0-9a-z]{24}$/.test(a.headers['request-id'] ?? '')) fail('no request-id');
  const documented = a.status in r.responses;
  if (a.status === 403) fail('403: the lanes answer 401 or 404, never 403');
  if (a.status >= 500 && !documented) fail('an undocumented 5xx');
  if (outcome === 'refused') {
    if (a.status !== 401) fail('expected 401');
    else if (!/"type":"authentication_error"/.test(a.text))
      fail('401 without the authentication_error envelope');
  } else if (outcome === 'absent') {
    if (a.status !== absentStatus) fail(`expected ${absentStatus} exactly like a missing id`);
    if (missing) {
      tally.comparisons++;
      if (comparable(a) !== comparable(missing)) fail(`differs from the missing-id answer ${missing.text}`);
    }
  } else if (a.status === 401 || a.status === 404) {
    fail(`the caller's own object was refused`);
  }
}

/** No foreign token the caller did not send, no secret at all, no other environment's id. */
export function checkLeaks(
  tally: Tally,
  a: Answer,
  foreign: readonly string[],
  secrets: readonly string[],
  ownEnvironmentId: string | null,
): void {
  const seen = `${JSON.stringify(a.headers)}\n${a.text}`;
  for (const s of secrets) {
    tally.searched++;
    if (seen.includes(s)) tally.failures.push(`${a.label}: the answer carries a secret`);
  }
  if (ownEnvironmentId === null) return;
  for (const token of foreign) {
    if (a.sent.includes(token)) continue;
    tally.searched++;
    if (seen.includes(token)) tally.failures.push(`${a.label}: foreign "${token}" in the answer`);
  }
  for (const m of a.text.matchAll(/"environment_id":"([^"]*)"/g)) {
    if (m[1] !== ownEnvironmentId)
      tally.failures.push(`${a.label}: environment_id ${m[1]} is not the caller's`);
  }
}
