/**
 * The console's static assets, bundled into the app (`assets.generated.ts`): served from the
 * app's own origin under a content-hashed name, so browsers may cache them for good and a
 * deploy with new assets is never mixed with old ones.
 */
import type { Hono } from 'hono';
import type { AppEnv } from '../api/types.js';
import {
  consoleCss,
  consoleCssHash,
  consoleJs,
  consoleJsHash,
  uplotCss,
  uplotCssHash,
  uplotJs,
  uplotJsHash,
} from './assets.generated.js';

const BASE = '/console/assets';

interface Asset {
  body: string;
  type: string;
}

const files = new Map<string, Asset>();
function asset(name: string, ext: 'js' | 'css', body: string, hash: string): string {
  const file = `${name}-${hash}.${ext}`;
  files.set(file, {
    body,
    type: ext === 'js' ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8',
  });
  return `${BASE}/${file}`;
}

export const ASSET_PATHS = {
  js: asset('console', 'js', consoleJs, consoleJsHash),
  css: asset('console', 'css', consoleCss, consoleCssHash),
  uplotJs: asset('uplot', 'js', uplotJs, uplotJsHash),
  uplotCss: asset('uplot', 'css', uplotCss, uplotCssHash),
} as const;

/** GET /console/assets/{file}: no credentials needed, nothing in them is secret. */
export function registerConsoleAssets(app: Hono<AppEnv>): void {
  app.get(`${BASE}/:file`, (c) => {
    const found = files.get(c.req.param('file'));
    if (!found) return c.text('no such asset\n', 404);
    return c.body(found.body, 200, {
      'content-type': found.type,
      'cache-control': 'public, max-age=31536000, immutable',
      'x-content-type-options': 'nosniff',
    });
  });
}
