/**
 * JSON the console's script polls: the figures of the environments on the page, and one
 * environment's samples for the chart. Cookie-authenticated like the pages; a 401 sends the
 * script to sign-in.
 */
import type { Hono } from 'hono';
import { badRequest } from '../api/errors.js';
import { environmentParam } from '../api/routes/management-scope.js';
import { queryParam } from '../api/routes/work-scope.js';
import type { AppEnv } from '../api/types.js';
import { isMintedId } from '../ids.js';
import { environmentSummaries, readSamples } from '../queue/index.js';
import { operator } from './context.js';
import { figures } from './figures.js';
import { CHART_MINUTES } from './routes/environment.js';
import { CONSOLE_BASE } from './session.js';

/** At most one page of environments at a time. */
const MAX_IDS = 100;

export function registerLive(app: Hono<AppEnv>): void {
  app.get(`${CONSOLE_BASE}/live/summaries`, async (c) => {
    const { db } = await operator(app, c);
    const ids = (queryParam(c, 'ids') ?? '').split(',').filter((id) => id !== '');
    if (ids.length > MAX_IDS || !ids.every((id) => isMintedId(id, 'env')))
      throw badRequest(`ids must be up to ${MAX_IDS} environment ids, comma-separated`);
    return c.json({ data: (await environmentSummaries(db, [...new Set(ids)])).map(figures) });
  });

  app.get(`${CONSOLE_BASE}/live/environments/:environmentId/samples`, async (c) => {
    const { db } = await operator(app, c);
    const id = environmentParam(c);
    const samples = await readSamples(db, id, CHART_MINUTES);
    const [now] = await environmentSummaries(db, [id]);
    return c.json({ samples, now: now && figures(now) });
  });
}
