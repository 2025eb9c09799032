/**
 * What every answer to a fuzz request must be: below 500; a status the route documents (its
 * own statuses, plus the errors every route can give); an error in the documented envelope,
 * its type matching its status; a success matching its documented schema; and nothing in any
 * body a server should never say — stack frames, source paths, SQL, a seeded secret.
 */
import * as z from 'zod/mini';
import { errorEnvelope } from '../../../src/api/openapi.js';
import type { RouteModel } from './routes.js';

/** What came back, whichever way it was sent. */
export interface Answer {
  status: number;
  header(name: string): string | null;
  text: string;
  ms: number;
  /** Answered (or the connection closed: status 0) by Node's HTTP parser, before the app. */
  parser?: boolean;
}

/** What Node's HTTP parser answers a request it cannot parse; 0: it closed the connection. */
const PARSER_STATUSES = new Set([0, 400, 413, 414, 431]);

/** Errors any route answers: bad input, credentials, unknown ids or paths, wrong method, too large. */
const ANY_ROUTE = [400, 401, 403, 404, 405, 413];

/** The error type each status carries (`src/api/errors.ts`). */
const TYPES_BY_STATUS: Record<number, string[]> = {
  400: ['invalid_request_error'],
  401: ['authentication_error'],
  403: ['permission_error'],
  404: ['not_found_error'],
  405: ['invalid_request_error'],
  409: ['invalid_request_error', 'lease_lost_error'],
  412: ['invalid_request_error'],
  413: ['request_too_large'],
  429: ['rate_limit_error'],
  503: ['api_error', 'overloaded_error'],
};

/** Things only a leaking server writes: V8 stack frames, source paths, Postgres and Drizzle errors. */
const LEAKS: [string, RegExp][] = [
  ['stack frame', /\n\s+at |\bat (?:async )?[\w.<>]+ \(|file:\/\/|node:internal/],
  ['source path', /\/work\/main|node_modules|\/src\/[\w/-]+\.ts|\.ts:\d+:\d+/],
  ['SQL', /Failed query|\bselect\b[^"]{0,80}\bfrom\b (?:"?\w+"?)|\binsert into\b|\bupdate "?\w+"? set\b/i],
  [
    'database error',
    /violates (?:check|unique|foreign key|not-null) constraint|syntax error at or near|invalid input syntax for|relation "\w+"|column "\w+"|SQLSTATE|duplicate key value/,
  ],
];

export function allowedStatuses(route: RouteModel | null): Set<number> {
  return new Set([...Object.keys(route?.doc.responses ?? {}).map(Number), ...ANY_ROUTE]);
}

/**
 * Every way the answer breaks the contract; empty when it keeps it. `route` is the documented
 * route that answered (after a method or path mutation, maybe another one, or none at all).
 */
export function problemsWith(
  route: RouteModel | null,
  answer: Answer,
  secrets: readonly string[],
  method = route?.method,
): string[] {
  const problems: string[] = [];
  const { status, text } = answer;
  if (answer.parser) return PARSER_STATUSES.has(status) ? [] : [`HTTP parser answered ${status}`];
  if (status >= 500) problems.push(`server error ${status}`);
  if (!allowedStatuses(route).has(status)) problems.push(`undocumented status ${status}`);
  if (!/^req_[0-9a-z]{24}$/.test(answer.header('request-id') ?? '')) problems.push('no request-id header');
  for (const [what, pattern] of LEAKS) if (pattern.test(text)) problems.push(`body leaks ${what}`);
  for (const secret of secrets)
    if (secret && text.includes(secret)) problems.push('body carries a seeded secret');
  // A HEAD answer has its GET's status and headers but never a body.
  if (method === 'HEAD') return answer.text === '' ? problems : [...problems, 'HEAD answered with a body'];
  if (status >= 400) problems.push(...envelopeProblems(answer));
  else problems.push(...successProblems(route, answer));
  return problems;
}

function envelopeProblems(answer: Answer): string[] {
  if (!answer.header('content-type')?.startsWith('application/json'))
    return ['error without a JSON content-type'];
  let body: unknown;
  try {
    body = JSON.parse(answer.text);
  } catch {
    return ['error body is not JSON'];
  }
  const parsed = z.safeParse(errorEnvelope, body);
  if (!parsed.success) return [`error body is not the envelope: ${parsed.error.issues[0]?.message}`];
  const problems: string[] = [];
  if (parsed.data.request_id !== answer.header('request-id'))
    problems.push('request_id differs from the header');
  const types = TYPES_BY_STATUS[answer.status] ?? [];
  if (!types.includes(parsed.data.error.type)) {
    problems.push(`error type ${parsed.data.error.type} on status ${answer.status}`);
  }
  return problems;
}

function successProblems(route: RouteModel | null, answer: Answer): string[] {
  const documented = route?.doc.responses[answer.status];
  if (!documented) return [];
  if (documented.schema === undefined || documented.schema === null) {
    return answer.text === '' ? [] : [`status ${answer.status} documents no body but one came`];
  }
  let body: unknown;
  try {
    body = JSON.parse(answer.text);
  } catch {
    return ['success body is not JSON'];
  }
  const parsed = z.safeParse(documented.schema, body);
  return parsed.success ? [] : [`success body off its schema at ${parsed.error.issues[0]?.path.join('.')}`];
}
