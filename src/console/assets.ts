/**
 * The console's static files live in assets/console/assets/ under content-hashed names
 * (scripts/console-assets.mjs), served by the platform on Workers and by the app's static
 * files on Node (src/api/static-files.ts). Pages link them through ASSET_PATHS.
 */
import type { Hono } from 'hono';
import type { AppEnv } from '../api/types.js';

export { ASSET_PATHS } from './assets.generated.js';

/**
 * A path under /console/assets/ that no file answered: a 404 for anyone, signed in or not
 * (nothing there is secret), rather than the console's sign-in redirect.
 */
export function registerConsoleAssets(app: Hono<AppEnv>): void {
  app.get('/console/assets/:file', (c) => c.text('no such asset\n', 404));
}
