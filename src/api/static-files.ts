/**
 * Files served as they are — the OpenAPI document and the console's script, stylesheets and
 * chart library, all in assets/. On Workers the platform serves them before the Worker runs
 * (wrangler.toml `[assets]`), with the headers that assets/_headers gives each path; on Node
 * the entry point reads the same directory and the same _headers file (functions/static-files.ts)
 * and the app serves them here. One directory and one header file for both runtimes, and
 * nothing of either in the script a cold Worker isolate has to parse.
 */
import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from './types.js';

export interface StaticFile {
  body: Uint8Array;
  /** Everything the answer carries: its content type and what _headers adds for its path. */
  headers: Readonly<Record<string, string>>;
}

/** URL path (`/console/assets/console-<hash>.js`) → file. */
export type StaticFiles = ReadonlyMap<string, StaticFile>;

const TYPES: Record<string, string> = {
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  // JSON is UTF-8 by definition (RFC 8259): no charset parameter.
  json: 'application/json',
  png: 'image/png',
  svg: 'image/svg+xml',
  txt: 'text/plain; charset=utf-8',
};

export function contentTypeOf(path: string): string {
  return TYPES[path.slice(path.lastIndexOf('.') + 1)] ?? 'application/octet-stream';
}

interface HeaderRule {
  pattern: RegExp;
  headers: Record<string, string>;
}

/**
 * The rules of a Workers `_headers` file, in the subset Leasehold writes: a path at the start
 * of a line (`*` matches any run of characters), then its headers indented as `Name: value`;
 * `#` starts a comment.
 */
export function parseHeadersFile(text: string): HeaderRule[] {
  const rules: HeaderRule[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim() || line.trimStart().startsWith('#')) continue;
    if (!/^\s/.test(line)) {
      const source = line.trim().split('*').map(escapeRegExp).join('.*');
      rules.push({ pattern: new RegExp(`^${source}$`), headers: {} });
      continue;
    }
    const colon = line.indexOf(':');
    const rule = rules.at(-1);
    if (colon < 0 || !rule)
      throw new Error(`_headers: a header line outside a path, or without a colon: ${line}`);
    rule.headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return rules;
}

/** The answer's headers for `path`: its content type, then every rule that matches it, in order. */
export function staticHeaders(path: string, rules: readonly HeaderRule[]): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': contentTypeOf(path) };
  for (const rule of rules) if (rule.pattern.test(path)) Object.assign(headers, rule.headers);
  return headers;
}

const escapeRegExp = (s: string) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&');

/** GET and HEAD of a known path answer the file; anything else goes on to the routes. */
export function serveStaticFiles(files: StaticFiles): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const file = c.req.method === 'GET' || c.req.method === 'HEAD' ? files.get(c.req.path) : undefined;
    if (!file) return next();
    return c.body(file.body as Uint8Array<ArrayBuffer>, 200, file.headers);
  };
}
