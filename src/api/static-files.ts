/**
 * Files served as they are (the console's script, stylesheets and chart library): on Workers
 * the platform serves them from assets/ before the Worker runs (wrangler.toml `[assets]`, with
 * the headers in assets/_headers); on Node the entry point reads the same directory
 * (functions/static-files.ts) and hands it to the app, which serves it here with the same
 * headers. Keeping them out of the app's code keeps them out of the script a cold Worker
 * isolate has to parse.
 */
import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from './types.js';

export interface StaticFile {
  body: Uint8Array;
  type: string;
}

/** URL path (`/console/assets/console-<hash>.js`) → file. */
export type StaticFiles = ReadonlyMap<string, StaticFile>;

const TYPES: Record<string, string> = {
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  json: 'application/json; charset=utf-8',
  png: 'image/png',
  svg: 'image/svg+xml',
  txt: 'text/plain; charset=utf-8',
};

export function contentTypeOf(path: string): string {
  return TYPES[path.slice(path.lastIndexOf('.') + 1)] ?? 'application/octet-stream';
}

/** A name carrying its content's hash (`name-<12 hex>.ext`) never changes content: cache it for good. */
const HASHED_NAME = /-[0-9a-f]{12}\.[a-z]+$/;

/** GET and HEAD of a known path answer the file; anything else goes on to the routes. */
export function serveStaticFiles(files: StaticFiles): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const file = c.req.method === 'GET' || c.req.method === 'HEAD' ? files.get(c.req.path) : undefined;
    if (!file) return next();
    return c.body(file.body as Uint8Array<ArrayBuffer>, 200, {
      'content-type': file.type,
      'cache-control': HASHED_NAME.test(c.req.path) ? 'public, max-age=31536000, immutable' : 'no-cache',
      'x-content-type-options': 'nosniff',
    });
  };
}
