/**
 * The console's pages. Each handler reads through the API where the API has the answer, and
 * through the queue's operator reads (both lanes, by id) where only an operator may look.
 */
import type { Context, Hono } from 'hono';
import { ApiError, badRequest, notFound } from '../api/errors.js';
import { JOURNAL_TOKEN } from '../api/routes/journal-scope.js';
import type { WireRecord, WireReport } from '../api/routes/journal-wire.js';
import { queryParam } from '../api/routes/work-scope.js';
import type { AppEnv } from '../api/types.js';
import { decodeCursor, encodeCursor } from '../api/wire.js';
import {
  browseWork,
  environmentHealthchecks,
  environmentSummaries,
  inspectWork,
  readSamples,
  sessionWork,
  WORK_KINDS,
  WORK_STATES,
  type WorkKind,
  type WorkState,
} from '../queue/index.js';
import { noticeFor, operator } from './context.js';
import { seg } from './internal-api.js';
import { type EnvironmentView, environmentPage } from './pages/environment.js';
import { environmentsPage } from './pages/environments.js';
import { journalRunPage, journalStepPage } from './pages/journal.js';
import { workItemPage } from './pages/work-item.js';
import { CONSOLE_BASE } from './session.js';

const ENVIRONMENTS_PAGE = 50;
const WORK_PAGE = 25;
const SESSION_ITEMS = 50;
const JOURNAL_PAGE = 500;
export const CHART_MINUTES = 60;

type KeyList = { data: NonNullable<EnvironmentView['keys']> };

interface WireEnvironment {
  id: string;
  name: string;
  config: { type: string };
  archived_at: string | null;
}

export function registerReadRoutes(app: Hono<AppEnv>): void {
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

  app.get(`${CONSOLE_BASE}/environments/:environmentId`, async (c) => {
    const { api, db } = await operator(app, c);
    const id = c.req.param('environmentId');
    const env = await api<WireEnvironment>('GET', `/v1/environments/${seg(id)}`);
    const state = oneOf(c, 'state', WORK_STATES) as WorkState | undefined;
    const kind = oneOf(c, 'kind', WORK_KINDS) as WorkKind | undefined;
    const pageParam = queryParam(c, 'page');
    const after = pageParam ? decodeCursor(pageParam) : null;
    if (pageParam && after === null) throw badRequest('invalid page cursor');
    const [summary] = await environmentSummaries(db, [id]);
    const samples = await readSamples(db, id, CHART_MINUTES);
    const selfHosted = env.config.type === 'self_hosted';
    const keys = selfHosted ? (await api<KeyList>('GET', `/v1/environments/${seg(id)}/keys`)).data : null;
    const healthchecks = selfHosted ? await environmentHealthchecks(db, id) : null;
    const found = await browseWork(db, id, { state, kind, after, fetch: WORK_PAGE + 1 });
    const items = found.slice(0, WORK_PAGE);
    const last = items[items.length - 1];
    const nextPage =
      found.length > WORK_PAGE && last ? encodeCursor({ createdAt: last.createdAt, id: last.id }) : null;
    return c.html(
      environmentPage({
        id,
        name: env.name,
        kind: env.config.type,
        archivedAt: env.archived_at,
        summary: summary!,
        samples,
        keys,
        healthchecks,
        items,
        filter: { state, kind },
        nextPage,
        notice: noticeFor(c),
      }),
    );
  });

  app.get(`${CONSOLE_BASE}/work/:workId`, async (c) => {
    const { db } = await operator(app, c);
    const item = await inspectWork(db, c.req.param('workId'));
    if (!item) throw notFound('work item not found');
    // A healthcheck belongs to no session, so it has no session items to show beside it.
    const sessionItems = item.sessionId === null ? [] : await sessionWork(db, item.sessionId, SESSION_ITEMS);
    return c.html(workItemPage({ item, sessionItems, notice: noticeFor(c) }));
  });

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

/** A filter value from the query: absent, empty, or one of `allowed` (else 400). */
function oneOf(c: Context<AppEnv>, name: string, allowed: readonly string[]): string | undefined {
  const value = queryParam(c, name);
  if (value === undefined) return undefined;
  if (!allowed.includes(value)) throw badRequest(`${name} must be one of ${allowed.join(', ')}`);
  return value;
}
