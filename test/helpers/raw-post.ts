/**
 * A POST over a fresh loopback connection (`Connection: close`, as Node sends without an
 * agent), its body sent with a Content-Length or chunked, for tests of what a server does with
 * bodies it refuses before reading them. No retry: a refused body's answer must arrive.
 */
import http from 'node:http';

/** A response read whole: status, headers and the error envelope (or null without a body). */
export interface Answer {
  status: number;
  headers: Headers;
  body: { type?: string; error?: { type: string; message: string } } | null;
}

const CHUNK = 64 * 1024;

export function rawPost(
  port: number,
  path: string,
  key: string,
  body: Buffer,
  encoding: 'content-length' | 'chunked',
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
    };
    if (encoding === 'content-length') headers['content-length'] = String(body.length);
    else headers['transfer-encoding'] = 'chunked';
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', headers, agent: false });
    let answered = false;
    req.on('response', (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') h.set(k, v);
        resolve({ status: res.statusCode!, headers: h, body: text ? JSON.parse(text) : null });
      });
    });
    // An answer read before the connection failed stands; the Node server lingers after an
    // early 413, so the client finishes writing and reads it (functions/lingering-close.ts).
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    if (encoding === 'content-length') {
      req.end(body);
      return;
    }
    for (let at = 0; at < body.length; at += CHUNK) req.write(body.subarray(at, at + CHUNK));
    req.end();
  });
}
