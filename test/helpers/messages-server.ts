/**
 * A fake Messages API on 127.0.0.1: it answers `POST /v1/messages` with recorded responses in
 * order, and checks each request the way the real API would refuse it — the key, the version
 * header, the conversation rules (messages-checks.ts) and the tool names the test expects.
 * A request that fails a check is answered with an Anthropic-style error (401 for a wrong key,
 * 400 otherwise) and recorded in `violations`, so a test asserts the list is empty rather than
 * trusting that a client surfaced the error.
 *
 * `failNext` makes the next requests fail with a status (529, 429, 500…) before any recorded
 * response is served, to test retries; a failed request still goes through the checks first.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { conversationProblems } from './messages-checks.js';

export interface MessagesServerOptions {
  /** Recorded Messages responses (`{content, stop_reason, usage}` at least), served in order. */
  responses: readonly object[];
  /** The x-api-key every request must carry. */
  apiKey: string;
  /** The tool names every request must offer, in order ([] = no tools). */
  tools: readonly string[];
}

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}

export interface Violation {
  /** Index into `requests`. */
  request: number;
  problems: string[];
}

/** The error `type` the real API puts in its body for each status. */
const ERROR_TYPES: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  404: 'not_found_error',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

export class MessagesServer {
  readonly requests: ReceivedRequest[] = [];
  readonly violations: Violation[] = [];
  readonly #options: MessagesServerOptions;
  readonly #server: Server;
  readonly #failures: Array<{ status: number; headers: Record<string, string> }> = [];
  #served = 0;
  url = '';

  private constructor(options: MessagesServerOptions) {
    this.#options = options;
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () =>
        this.#answer(req.method ?? '', req.url ?? '', req.headers, Buffer.concat(chunks), res),
      );
    });
  }

  static async start(options: MessagesServerOptions): Promise<MessagesServer> {
    const server = new MessagesServer(options);
    await new Promise<void>((resolve) => server.#server.listen(0, '127.0.0.1', resolve));
    server.url = `http://127.0.0.1:${(server.#server.address() as AddressInfo).port}`;
    return server;
  }

  /** How many recorded responses have been served. */
  get served(): number {
    return this.#served;
  }

  /** The next `times` requests that pass the checks are answered `status` with `headers`. */
  failNext(times: number, status: number, headers: Record<string, string> = {}): void {
    for (let i = 0; i < times; i++) this.#failures.push({ status, headers });
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve, reject) =>
      this.#server.close((err) => (err ? reject(err) : resolve())),
    );
  }

  #answer(
    method: string,
    path: string,
    headers: IncomingHttpHeaders,
    raw: Buffer,
    res: ServerResponse,
  ): void {
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      body = undefined;
    }
    const index = this.requests.push({ method, path, headers, body }) - 1;
    if (method !== 'POST' || path !== '/v1/messages') {
      this.violations.push({ request: index, problems: [`unexpected ${method} ${path}`] });
      sendError(res, 404, `${method} ${path} is not the Messages API`);
      return;
    }
    if (headers['x-api-key'] !== this.#options.apiKey) {
      this.violations.push({ request: index, problems: ['x-api-key is not the configured key'] });
      sendError(res, 401, 'invalid x-api-key');
      return;
    }
    const problems = this.#problems(headers, body);
    if (problems.length > 0) {
      this.violations.push({ request: index, problems });
      sendError(res, 400, problems.join('; '));
      return;
    }
    const failure = this.#failures.shift();
    if (failure) {
      sendError(res, failure.status, `injected ${failure.status}`, failure.headers);
      return;
    }
    const recorded = this.#options.responses[this.#served];
    if (recorded === undefined) {
      this.violations.push({
        request: index,
        problems: [`no recorded response left (served ${this.#served})`],
      });
      sendError(res, 400, 'the fake API has no response left');
      return;
    }
    this.#served++;
    const model = (body as { model: string }).model;
    send(res, 200, {
      id: `msg_fake_${this.#served}`,
      type: 'message',
      role: 'assistant',
      model,
      stop_sequence: null,
      usage: { input_tokens: 1, output_tokens: 1 },
      ...recorded,
    });
  }

  #problems(headers: IncomingHttpHeaders, body: unknown): string[] {
    const problems: string[] = [];
    if (headers['anthropic-version'] !== '2023-06-01') problems.push('anthropic-version must be 2023-06-01');
    if (!String(headers['content-type']).startsWith('application/json')) {
      problems.push('content-type must be application/json');
    }
    if (typeof body !== 'object' || body === null) return [...problems, 'the body is not a JSON object'];
    const { model, max_tokens, messages, tools } = body as Record<string, unknown>;
    if (typeof model !== 'string' || model === '') problems.push('model must be a non-empty string');
    if (!Number.isInteger(max_tokens) || (max_tokens as number) < 1) problems.push('max_tokens must be ≥ 1');
    problems.push(...conversationProblems(messages));
    const names = Array.isArray(tools) ? tools.map((t: { name?: unknown }) => t?.name) : [];
    if (JSON.stringify(names) !== JSON.stringify(this.#options.tools)) {
      problems.push(
        `tools ${JSON.stringify(names)} are not the expected ${JSON.stringify(this.#options.tools)}`,
      );
    }
    return problems;
  }
}

function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  const type = ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
  send(res, status, { type: 'error', error: { type, message }, request_id: 'req_fake' }, headers);
}

function send(
  res: ServerResponse,
  status: number,
  json: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', 'request-id': 'req_fake', ...headers });
  res.end(JSON.stringify(json));
}
