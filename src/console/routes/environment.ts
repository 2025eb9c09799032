import type { Context, Hono } from 'hono';
import { badRequest } from '../../api/errors.js';
import type { WireEnvironment } from '../../api/routes/environment-wire.js';
import { queryParam } from '../../api/routes/work-scope.js';
import type { AppEnv } from '../../api/types.js';
import { decodeCursor, encodeCursor } from '../../api/wire.js';
import {
  browseWork,
  environmentHealthchecks,
  environmentSummaries,
  readSamples,
  WORK_KINDS,
  WORK_STATES,
  type WorkKind,
  type WorkState,
} from '../../queue/index.js';
import { noticeFor, operator } from '../context.js';
import { seg } from '../internal-api.js';
import { type EnvironmentView, environmentPage } from '../pages/environment.js';
import { CONSOLE_BASE } from '../session.js';

const WORK_PAGE = 25;
/** The chart's window, on the page and in its live refresh (live.ts). */
export const CHART_MINUTES = 60;

type KeyList = { data: NonNullable<EnvironmentView['keys']> };

/**
 * GET /console/environments/{id} — an environment: its figures and chart, its keys and
 * healthchecks when self_hosted, and its work items filtered by state and kind, a page at a time.
 */
export function registerEnvironmentRoute(app: Hono<AppEnv>): void {
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
}

/** A filter value from the query: absent, empty, or one of `allowed` (else 400). */
function oneOf(c: Context<AppEnv>, name: string, allowed: readonly string[]): string | undefined {
  const value = queryParam(c, name);
  if (value === undefined) return undefined;
  if (!allowed.includes(value)) throw badRequest(`${name} must be one of ${allowed.join(', ')}`);
  return value;
}
