/**
 * The two ways a fuzz request reaches the app: in process (`app.request`), and over loopback
 * HTTP to the real Node server, where real chunking, header parsing and body limits apply —
 * including requests malformed at the HTTP level, written byte by byte on a raw socket. An
 * answer without a `request-id` came from Node's HTTP parser, before the app saw anything.
 */
import http from 'node:http';
import net from 'node:net';
import type { Hono } from 'hono';
import type { AppEnv } from '../../../src/api/types.js';
import type { Answer } from './answer-check.js';
import type { Target } from './fuzz-run.js';
import { toFetchRequest, type WireRequest } from './request.js';

/** How long one answer may take before the request counts as hung. */
const ANSWER_TIMEOUT_MS = 10_000;

export function inProcess(app: Hono<AppEnv>): Target {
  return {
    async send(wire) {
      const started = performance.now();
      const res = await app.request(toFetchRequest(wire));
      const text = await res.text();
      return { status: res.status, header: (n) => res.headers.get(n), text, ms: performance.now() - started };
    },
  };
}

/** The real server at `port`, one request at a time over a kept-alive connection. */
export function overHttp(port: number): Target & { close(): void } {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const send = (wire: WireRequest) =>
    new Promise<Answer>((resolve, reject) => {
      const started = performance.now();
      // An object whose values are lists, not a raw array: Node sends a list as repeated header
      // lines (duplicates survive), and only in an object does it see a Content-Length — given a
      // raw array it adds Transfer-Encoding: chunked as well, and the parser refuses both at once.
      const headers: Record<string, string[]> = {};
      for (const [name, value] of wire.headers) {
        const key = name.toLowerCase();
        headers[key] = [...(headers[key] ?? []), value];
      }
      if (wire.body instanceof Uint8Array) headers['content-length'] = [String(wire.body.length)];
      // A streamed body is framed as chunked whatever the method: Node frames it unasked only
      // for methods that usually carry one, and an unframed DELETE body would reach the server
      // as a second, garbled request (and the DELETE would be served without a body).
      else if (wire.body !== null) headers['transfer-encoding'] ??= ['chunked'];
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          method: wire.method,
          path: wire.target,
          headers,
          agent,
          timeout: ANSWER_TIMEOUT_MS,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              header: (n) => headerOf(res.headers[n]),
              text: Buffer.concat(chunks).toString('utf8'),
              ms: performance.now() - started,
              parser: res.headers['request-id'] === undefined,
            }),
          );
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`no answer within ${ANSWER_TIMEOUT_MS} ms`)));
      req.on('error', (err: NodeJS.ErrnoException) => {
        // The server may answer (413, 431) and close before the whole body is written: the
        // answer, if any, still arrives; only a connection closed without one is resolved here.
        if (err.code === 'EPIPE' || err.code === 'ECONNRESET')
          req.once('close', () => resolve(closed(started)));
        else reject(err);
      });
      writeBody(req, wire).catch(() => {});
    });
  return { send, close: () => agent.destroy() };
}

async function writeBody(req: http.ClientRequest, wire: WireRequest): Promise<void> {
  if (wire.body instanceof Uint8Array || wire.body === null) {
    req.end(wire.body ?? undefined);
    return;
  }
  // No Content-Length: Node sends the body chunked, as a streaming client would.
  for (const chunk of wire.body.chunks()) {
    if (req.destroyed) return;
    if (!req.write(chunk)) await new Promise((r) => req.once('drain', r));
  }
  req.end();
}

function headerOf(v: string | string[] | undefined): string | null {
  return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
}

/** The connection closed before an answer: what a server may do with a request it will not read. */
function closed(started: number): Answer {
  return { status: 0, header: () => null, text: '', ms: performance.now() - started, parser: true };
}

/**
 * Writes `bytes` on a fresh connection and reads until the server closes it. The write side
 * stays open: a client that half-closes makes Node drop the connection before it answers.
 */
export function sendRaw(port: number, bytes: Buffer): Promise<Answer> {
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    // A server still waiting for the rest of a request it will never get is a hang: no answer.
    socket.setTimeout(ANSWER_TIMEOUT_MS, () => socket.destroy());
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', () => socket.destroy());
    socket.on('close', () => resolve(parseAnswer(Buffer.concat(chunks), started)));
    socket.write(bytes);
  });
}

function parseAnswer(whole: Buffer, started: number): Answer {
  const ms = performance.now() - started;
  // An interim `100 Continue` precedes the answer proper.
  let raw = whole;
  while (raw.subarray(0, 12).toString('latin1') === 'HTTP/1.1 100')
    raw = raw.subarray(raw.indexOf('\r\n\r\n') + 4);
  const split = raw.indexOf('\r\n\r\n');
  if (split < 0) return { ...closed(started), ms };
  const [statusLine, ...lines] = raw.subarray(0, split).toString('latin1').split('\r\n');
  const headers = new Map<string, string>();
  for (const line of lines) {
    const at = line.indexOf(':');
    headers.set(line.slice(0, at).trim().toLowerCase(), line.slice(at + 1).trim());
  }
  let body = raw.subarray(split + 4);
  if (headers.get('transfer-encoding')?.includes('chunked')) body = dechunk(body);
  const status = Number(statusLine?.split(' ')[1] ?? 0);
  return {
    status,
    header: (n) => headers.get(n) ?? null,
    text: body.toString('utf8'),
    ms,
    parser: !headers.has('request-id'),
  };
}

function dechunk(body: Buffer): Buffer {
  const out: Buffer[] = [];
  let at = 0;
  while (at < body.length) {
    const eol = body.indexOf('\r\n', at);
    const size = Number.parseInt(body.subarray(at, eol).toString('latin1'), 16);
    if (!size) break;
    out.push(body.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
  return Buffer.concat(out);
}

/**
 * Requests broken at the HTTP level, each built from a valid request's parts: framing that
 * contradicts itself, bytes no request line may hold, headers Node refuses, sizes past its limits.
 */
export interface RawCase {
  name: string;
  bytes: Buffer;
  /** The method and path the app would see, if the request gets that far (null: no route's). */
  method: string;
  path: string | null;
}

export function malformed(wire: WireRequest, host: string): RawCase[] {
  const body = wire.body instanceof Uint8Array ? Buffer.from(wire.body) : Buffer.from('{}');
  const auth = wire.headers.map(([k, v]) => `${k}: ${v}\r\n`).join('');
  const head = (line: string, extra = '') =>
    `${line}\r\nhost: ${host}\r\n${auth}${extra}connection: close\r\n`;
  const line = `${wire.method} ${wire.target} HTTP/1.1`;
  const post = `POST ${wire.target} HTTP/1.1`;
  const path = wire.target.split('?')[0]!;
  const cases: [string, Buffer, string, string | null][] = [
    [
      'conflicting content-length',
      Buffer.concat([
        Buffer.from(`${head(post, `content-length: ${body.length}\r\ncontent-length: 1\r\n`)}\r\n`),
        body,
      ]),
      'POST',
      path,
    ],
    [
      'content-length and chunked',
      Buffer.concat([
        Buffer.from(`${head(post, `content-length: ${body.length}\r\ntransfer-encoding: chunked\r\n`)}\r\n`),
        body,
      ]),
      'POST',
      path,
    ],
    [
      'bad chunk size',
      Buffer.from(`${head(post, 'transfer-encoding: chunked\r\n')}\r\nzz\r\n{}\r\n0\r\n\r\n`),
      'POST',
      path,
    ],
    [
      'chunk extension',
      Buffer.from(`${head(post, 'transfer-encoding: chunked\r\n')}\r\n2;ext=1\r\n{}\r\n0\r\n\r\n`),
      'POST',
      path,
    ],
    [
      'declared length past the cap',
      Buffer.from(`${head(post, 'content-length: 104857600\r\n')}\r\n{"name":"`),
      'POST',
      path,
    ],
    [
      'space in target',
      Buffer.from(`${wire.method} ${wire.target}/a b HTTP/1.1\r\nhost: ${host}\r\nconnection: close\r\n\r\n`),
      wire.method,
      null,
    ],
    [
      'NUL in target',
      Buffer.concat([
        Buffer.from(`${wire.method} ${wire.target}`),
        Buffer.from([0]),
        Buffer.from(` HTTP/1.1\r\nhost: ${host}\r\nconnection: close\r\n\r\n`),
      ]),
      wire.method,
      null,
    ],
    [
      'raw 0xff in target',
      Buffer.concat([
        Buffer.from(`${wire.method} ${wire.target}/`),
        Buffer.from([0xff, 0xfe]),
        Buffer.from(` HTTP/1.1\r\nhost: ${host}\r\n${auth}connection: close\r\n\r\n`),
      ]),
      wire.method,
      null,
    ],
    ['invalid header name', Buffer.from(`${head(line, 'bad header: x\r\n')}\r\n`), wire.method, path],
    ['obs-fold header', Buffer.from(`${head(line, 'x-fold: a\r\n  b\r\n')}\r\n`), wire.method, path],
    [
      'bare LF',
      Buffer.from(`${line}\nhost: ${host}\n${auth.replaceAll('\r\n', '\n')}connection: close\n\n`),
      wire.method,
      path,
    ],
    [
      'HTTP/1.0 without host',
      Buffer.from(`${wire.method} ${wire.target} HTTP/1.0\r\n${auth}\r\n`),
      wire.method,
      path,
    ],
    [
      'absolute-form target',
      Buffer.from(`${head(`${wire.method} http://evil.example${wire.target} HTTP/1.1`)}\r\n`),
      wire.method,
      path,
    ],
    [
      '100 KB target',
      Buffer.from(`${head(`${wire.method} ${wire.target}?q=${'a'.repeat(100_000)} HTTP/1.1`)}\r\n`),
      wire.method,
      path,
    ],
    [
      'expect 100-continue',
      Buffer.concat([
        Buffer.from(`${head(post, `expect: 100-continue\r\ncontent-length: ${body.length}\r\n`)}\r\n`),
        body,
      ]),
      'POST',
      path,
    ],
    [
      'unknown HTTP version',
      Buffer.from(`${wire.method} ${wire.target} HTTP/9.9\r\nhost: ${host}\r\nconnection: close\r\n\r\n`),
      wire.method,
      path,
    ],
  ];
  return cases.map(([name, bytes, method, p]) => ({ name, bytes, method, path: p }));
}
