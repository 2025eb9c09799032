/**
 * The HTTP API as the CLI uses it: JSON in, JSON out, the credential as a bearer token, and
 * every failure turned into a CLI error — an error envelope into `RequestError` (status, type,
 * message), a refused connection into `UnreachableError`. `fetch` is injected.
 */
import { RequestError, UnreachableError, UsageError } from './errors.js';

/** How long one request may take; the API's longest answer (a long poll) is under a second. */
export const REQUEST_TIMEOUT_MS = 30_000;

export interface ClientOptions {
  baseUrl: string;
  key: string | undefined;
  fetch: typeof fetch;
}

export class Client {
  private readonly baseUrl: string;
  constructor(private readonly options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
  }

  get(path: string, query: Record<string, string | number | boolean | undefined> = {}): Promise<unknown> {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
    const qs = params.size ? `?${params}` : '';
    return this.request('GET', `${path}${qs}`);
  }

  post(path: string, body?: unknown): Promise<unknown> {
    return this.request('POST', path, body);
  }

  private async request(method: string, path: string, body?: unknown): Promise<unknown> {
    if (!this.options.key) throw new UsageError('no key: pass --key or set LEASEHOLD_KEY');
    const url = `${this.baseUrl}${path}`;
    const headers: Record<string, string> = { authorization: `Bearer ${this.options.key}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await this.options.fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (err) {
      throw new UnreachableError(this.baseUrl, { cause: err });
    }
    const textBody = await res.text();
    const parsed = textBody === '' ? null : safeJson(textBody);
    if (!res.ok) throw toRequestError(res, parsed, textBody);
    return parsed;
  }
}

function toRequestError(res: Response, parsed: unknown, raw: string): RequestError {
  const error = (parsed as { error?: { type?: unknown; message?: unknown } } | null)?.error;
  if (error && typeof error.type === 'string') {
    return new RequestError(res.status, error.type, String(error.message ?? ''));
  }
  // Not our envelope (a proxy's page, say): its status and the start of what it said.
  return new RequestError(res.status, 'http_error', raw.slice(0, 200) || res.statusText);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** A path segment, encoded so an id can never change the route it is put in. */
export const seg = (value: string): string => encodeURIComponent(value);
