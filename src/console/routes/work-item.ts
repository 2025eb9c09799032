import type { Hono } from 'hono';
import { notFound } from '../../api/errors.js';
import type { AppEnv } from '../../api/types.js';
import { inspectWork, sessionWork } from '../../queue/index.js';
import { noticeFor, operator } from '../context.js';
import { workItemPage } from '../pages/work-item.js';
import { CONSOLE_BASE } from '../session.js';

const SESSION_ITEMS = 50;

/** GET /console/work/{id} — a work item of either lane, with its session's other items. */
export function registerWorkItemRoute(app: Hono<AppEnv>): void {
  app.get(`${CONSOLE_BASE}/work/:workId`, async (c) => {
    const { db } = await operator(app, c);
    const item = await inspectWork(db, c.req.param('workId'));
    if (!item) throw notFound('work item not found');
    // A healthcheck belongs to no session, so it has no session items to show beside it.
    const sessionItems = item.sessionId === null ? [] : await sessionWork(db, item.sessionId, SESSION_ITEMS);
    return c.html(workItemPage({ item, sessionItems, notice: noticeFor(c) }));
  });
}
