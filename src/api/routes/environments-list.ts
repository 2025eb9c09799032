import type { Hono } from 'hono';
import * as z from 'zod/mini';
import { listEnvironments } from '../../environments/index.js';
import { ADMIN, authorize } from '../auth.js';
import { badRequest } from '../errors.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import {
  decodeEnvironmentCursor,
  encodeEnvironmentCursor,
  toWireEnvironment,
  wireEnvironmentListSchema,
} from './environment-wire.js';
import { ENVIRONMENTS } from './management-scope.js';
import { queryParam } from './work-scope.js';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

/**
 * GET /v1/environments?limit&page&include_archived — newest first, in keyset pages.
 * `next_page` is null on the last page: the SDK pages for as long as it is truthy, even
 * past an empty page. Archived environments only with `include_archived=true`.
 */
export function registerEnvironmentsList(app: Hono<AppEnv>): void {
  document({
    method: 'get',
    path: ENVIRONMENTS,
    summary: 'List environments, newest first',
    credentials: ['admin_api_key'],
    query: {
      limit: {
        schema: z.int().check(z.gte(1), z.lte(MAX_LIMIT)),
        description: `page size, default ${DEFAULT_LIMIT}`,
      },
      page: { schema: z.string(), description: 'the next_page cursor of the previous page' },
      include_archived: { schema: z.boolean(), description: 'include archived environments (default false)' },
    },
    responses: { 200: { description: 'a page', schema: wireEnvironmentListSchema } },
  });
  app.get(ENVIRONMENTS, async (c) => {
    await authorize(c, ADMIN);
    const limitText = queryParam(c, 'limit') ?? String(DEFAULT_LIMIT);
    const limit = Number(limitText);
    if (!/^\d{1,4}$/.test(limitText) || limit < 1 || limit > MAX_LIMIT) {
      throw badRequest(`limit must be an integer between 1 and ${MAX_LIMIT}`);
    }
    const page = queryParam(c, 'page');
    const after = page === undefined ? null : decodeEnvironmentCursor(page);
    if (page !== undefined && after === null) throw badRequest('invalid page cursor');
    const includeArchived = parseFlag(queryParam(c, 'include_archived'));

    const found = await listEnvironments(c.get('deps').db, { after, includeArchived, fetch: limit + 1 });
    const data = found.slice(0, limit);
    const last = data[data.length - 1];
    const nextPage = found.length > limit && last ? encodeEnvironmentCursor(last) : null;
    return reply(c, { data: data.map(toWireEnvironment), next_page: nextPage });
  });
}

/** A boolean query flag as the SDK sends one (`true`/`false`); absent is false. */
function parseFlag(value: string | undefined): boolean {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  throw badRequest('include_archived must be true or false');
}
