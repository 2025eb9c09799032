import type { Hono } from 'hono';
import { badRequest } from '../../api/errors.js';
import type { WireRecord, WireReport } from '../../api/routes/journal-wire.js';
import { queryParam } from '../../api/routes/work-scope.js';
import type { AppEnv } from '../../api/types.js';
import { operator } from '../context.js';
import { seg } from '../internal-api.js';
import { journalStepPage } from '../pages/journal.js';
import { CONSOLE_BASE } from '../session.js';

const JOURNAL_PAGE = 500;

/** GET /console/journal/{run}/{step} — a step's records, marked by the step's check. */
export function registerJournalStepRoute(app: Hono<AppEnv>): void {
  app.get(`${CONSOLE_BASE}/journal/:run/:step`, async (c) => {
    const { api } = await operator(app, c);
    const run = c.req.param('run');
    const step = c.req.param('step');
    const afterText = queryParam(c, 'after') ?? '0';
    if (!/^\d{1,15}$/.test(afterText)) throw badRequest('after must be a record seq');
    const base = `/v1/platform/runs/${seg(run)}`;
    const page = await api<{ data: WireRecord[]; next_after_seq: number | null }>(
      'GET',
      `${base}/steps/${seg(step)}/journal?after_seq=${afterText}&limit=${JOURNAL_PAGE}`,
    );
    // Only this step is checked: the run's other steps are the run page's business.
    const report = await api<WireReport>('GET', `${base}/check?step=${seg(step)}`);
    return c.html(
      journalStepPage({
        run,
        step,
        records: page.data,
        nextAfter: page.next_after_seq,
        stepReport: report.steps.find((s) => s.step_id === step),
      }),
    );
  });
}
