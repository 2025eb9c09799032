import type { Hono } from 'hono';
import type { WireEnvironment } from '../../api/routes/environment-wire.js';
import { queryParam } from '../../api/routes/work-scope.js';
import type { AppEnv } from '../../api/types.js';
import { environmentSummaries } from '../../queue/index.js';
import { operator } from '../context.js';
import { environmentsPage } from '../pages/environments.js';
import { CONSOLE_BASE } from '../session.js';

const ENVIRONMENTS_PAGE = 50;

/** GET /console — the environments, a page at a time, with each one's queue figures. */
export function registerEnvironmentsRoute(app: Hono<AppEnv>): void {
  app.get(CONSOLE_BASE, async (c) => {
    const { api, db } = await operator(app, c);
    const archived = queryParam(c, 'archived') === 'true';
    const query = new URLSearchParams({
      limit: String(ENVIRONMENTS_PAGE),
      include_archived: String(archived),
    });
    const pageParam = queryParam(c, 'page');
    if (pageParam) query.set('page', pageParam);
    const list = await api<{ data: WireEnvironment[]; next_page: string | null }>(
      'GET',
      `/v1/environments?${query}`,
    );
    const summaries = await environmentSummaries(
      db,
      list.data.map((e) => e.id),
    );
    const byId = new Map(summaries.map((s) => [s.environmentId, s]));
    const rows = list.data.map((e) => ({
      id: e.id,
      name: e.name,
      kind: e.config.type,
      archivedAt: e.archived_at,
      summary: byId.get(e.id),
    }));
    return c.html(environmentsPage(rows, list.next_page, archived));
  });
}
