import type { Hono } from 'hono';
import { ApiError } from '../../api/errors.js';
import { JOURNAL_TOKEN } from '../../api/routes/journal-scope.js';
import type { WireReport } from '../../api/routes/journal-wire.js';
import { queryParam } from '../../api/routes/work-scope.js';
import type { AppEnv } from '../../api/types.js';
import { operator } from '../context.js';
import { seg } from '../internal-api.js';
import { journalRunPage } from '../pages/journal.js';
import { CONSOLE_BASE } from '../session.js';

/** GET /console/journal?run= — a run's check, read through the API's journal routes. */
export function registerJournalRunRoute(app: Hono<AppEnv>): void {
  app.get(`${CONSOLE_BASE}/journal`, async (c) => {
    const { api } = await operator(app, c);
    const run = queryParam(c, 'run')?.trim() || undefined;
    if (run === undefined) return c.html(journalRunPage(undefined, null));
    if (!JOURNAL_TOKEN.test(run))
      return c.html(
        journalRunPage(run, null, 'A run id is 1–128 characters of A–Z, a–z, 0–9, _ and -.'),
        400,
      );
    try {
      return c.html(journalRunPage(run, await api<WireReport>('GET', `/v1/platform/runs/${seg(run)}/check`)));
    } catch (err) {
      // The journal away or not configured is worth a sentence on the page, not an error page.
      if (!(err instanceof ApiError) || err.status < 500) throw err;
      return c.html(journalRunPage(run, null, err.message), err.status as 503);
    }
  });
}
