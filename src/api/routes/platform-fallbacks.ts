import type { Hono } from 'hono';
import { authorize, PLATFORM } from '../auth.js';
import { ApiError, notFound } from '../errors.js';
import type { AppEnv } from '../types.js';
import { PLATFORM_BASE } from './platform-scope.js';

const KNOWN_PLATFORM_PATHS = [
  `${PLATFORM_BASE}/work`,
  `${PLATFORM_BASE}/work/claim`,
  `${PLATFORM_BASE}/work/:workId/extend`,
  `${PLATFORM_BASE}/work/:workId/complete`,
  `${PLATFORM_BASE}/work/:workId/complete_and_claim`,
  `${PLATFORM_BASE}/work/:workId/requeue`,
  `${PLATFORM_BASE}/sessions/:sessionId/cancel`,
  `${PLATFORM_BASE}/environments/:environmentId/healthchecks`,
];

/**
 * Registered after the platform endpoints, as the work API's: 405 for a known path with the
 * wrong method and 404 for an unknown path under the lane — both only after authentication,
 * so an anonymous caller learns nothing about what exists.
 */
export function registerPlatformFallbacks(app: Hono<AppEnv>): void {
  for (const path of KNOWN_PLATFORM_PATHS) {
    app.all(path, async (c) => {
      await authorize(c, PLATFORM);
      throw new ApiError(
        405,
        'invalid_request_error',
        `method ${c.req.method} is not allowed on ${c.req.path}`,
      );
    });
  }
  app.all(`${PLATFORM_BASE}/*`, async (c) => {
    await authorize(c, PLATFORM);
    throw notFound(`no such endpoint: ${c.req.path}`);
  });
}
