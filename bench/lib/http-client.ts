/**
 * A minimal HTTP/1.1 client for benchmarks: `node:http` over a keep-alive Agent, the whole
 * answer read as text. Chosen over `fetch` because it costs the client less CPU per request
 * on a machine the servers under test share; every subject is driven through it alike.
 */
import http from 'node:http';

export interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** How long one request may take before the run fails (a benchmark must not hang). */
const REQUEST_TIMEOUT_MS = 15_000;

export class HttpClient {
  private readonly agent: http.Agent;
  private readonly host: string;
  private readonly port: number;

  /** `sockets`: the most connections kept open at once (one per concurrent caller). */
  constructor(baseURL: string, sockets: number) {
    const url = new URL(baseURL);
    this.host = url.hostname;
    this.port = Number(url.port || 80);
    this.agent = new http.Agent({ keepAlive: true, maxSockets: sockets, maxFreeSockets: sockets });
  }

  /** Sends one request; a body is sent with its Content-Length, an empty one as `Content-Length: 0`. */
  request(method: string, path: string, headers: Record<string, string>, body?: string): Promise<HttpAnswer> {
    return new Promise((resolve, reject) => {
      const payload = body ?? '';
      const req = http.request(
        {
          agent: this.agent,
          host: this.host,
          port: this.port,
          method,
          path,
          headers:
            method === 'GET' ? headers : { ...headers, 'content-length': String(Buffer.byteLength(payload)) },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            text += chunk;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
          res.on('error', reject);
        },
      );
      req.setTimeout(REQUEST_TIMEOUT_MS, () =>
        req.destroy(new Error(`${method} ${path}: no answer in ${REQUEST_TIMEOUT_MS} ms`)),
      );
      req.on('error', reject);
      req.end(payload === '' ? undefined : payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
