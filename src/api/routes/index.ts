/**
 * Every route, in registration order. Literal segments (`poll`, `stats`) register before
 * `{workId}` so they win; the fallbacks last answer 405 for a known path with the wrong
 * method and 404 for an unknown path under the work API — both only after authentication,
 * so neither leaks anything to an anonymous caller.
 */
import type { Hono } from 'hono';
import { ANY_KEY, authorize } from '../auth.js';
import { ApiError, notFound } from '../errors.js';
import type { AppEnv } from '../types.js';
import { registerAgents } from './agents.js';
import { registerJournalRoutes } from './journal.js';
import { registerManagement } from './management.js';
import { registerPlatform } from './platform.js';
import { registerSessions } from './sessions.js';
import { registerWorkAck } from './work-ack.js';
import { registerWorkGet } from './work-get.js';
import { registerWorkHeartbeat } from './work-heartbeat.js';
import { registerWorkList } from './work-list.js';
import { registerWorkPoll } from './work-poll.js';
import { environmentId, WORK_BASE } from './work-scope.js';
import { registerWorkStats } from './work-stats.js';
import { registerWorkStop } from './work-stop.js';
import { registerWorkUpdate } from './work-update.js';

export function registerRoutes(app: Hono<AppEnv>): void {
  registerManagement(app);
  registerAgents(app);
  registerSessions(app);
  registerJournalRoutes(app);
  registerPlatform(app);
  registerWorkPoll(app);
  registerWorkStats(app);
  registerWorkList(app);
  registerWorkAck(app);
  registerWorkHeartbeat(app);
  registerWorkStop(app);
  registerWorkGet(app);
  registerWorkUpdate(app);
  registerWorkFallbacks(app);
}

const KNOWN_WORK_PATHS = [
  WORK_BASE,
  `${WORK_BASE}/:workId`,
  `${WORK_BASE}/:workId/ack`,
  `${WORK_BASE}/:workId/heartbeat`,
  `${WORK_BASE}/:workId/stop`,
];

function registerWorkFallbacks(app: Hono<AppEnv>): void {
  for (const path of KNOWN_WORK_PATHS) {
    app.all(path, async (c) => {
      await authorize(c, ANY_KEY, environmentId(c));
      throw new ApiError(
        405,
        'invalid_request_error',
        `method ${c.req.method} is not allowed on ${c.req.path}`,
      );
    });
  }
  app.all(`${WORK_BASE}/*`, async (c) => {
    await authorize(c, ANY_KEY, environmentId(c));
    throw notFound(`no such endpoint: ${c.req.path}`);
  });
}
