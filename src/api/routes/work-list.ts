import type { Hono } from 'hono';
import * as z from 'zod/mini';
import { listWork } from '../../queue/index.js';
import { authorize, ENVIRONMENT_KEY } from '../auth.js';
import { badRequest } from '../errors.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { decodeCursor, encodeCursor, toWireWork, wireWorkListSchema } from '../wire.js';
import { environmentId, queryParam, WORK_BASE } from './work-scope.js';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

/**
 * GET /work?limit&page — the environment's items in every state, newest first, in keyset
 * pages. `next_page` is null on the last page (the SDK pages for as long as it is truthy).
 * Environment key only, as the official API.
 */
export function registerWorkList(app: Hono<AppEnv>): void {
  document({
    method: 'get',
    path: WORK_BASE,
    summary: 'List work items, newest first',
    credentials: ['environment_key'],
    query: {
      limit: { schema: z.int().check(z.gte(1), z.lte(MAX_LIMIT)), description: 'page size, default 20' },
      page: { schema: z.string(), description: 'the next_page cursor of the previous page' },
    },
    responses: { 200: { description: 'a page', schema: wireWorkListSchema } },
  });
  app.get(WORK_BASE, async (c) => {
    const env = environmentId(c);
    await authorize(c, ENVIRONMENT_KEY, env);
    const limitText = queryParam(c, 'limit');
    const limit = limitText === undefined ? DEFAULT_LIMIT : Number(limitText);
    if (!/^\d{1,4}$/.test(limitText ?? '20') || limit < 1 || limit > MAX_LIMIT) {
      throw badRequest(`limit must be an integer between 1 and ${MAX_LIMIT}`);
    }
    const page = queryParam(c, 'page');
    const after = page === undefined ? null : decodeCursor(page);
    if (page !== undefined && after === null) throw badRequest('invalid page cursor');
    const items = await listWork(c.get('deps').db, env, { after, fetch: limit + 1 });
    const data = items.slice(0, limit);
    const last = data[data.length - 1];
    const nextPage =
      items.length > limit && last ? encodeCursor({ createdAt: last.createdAt, id: last.id }) : null;
    return reply(c, { data: data.map(toWireWork), next_page: nextPage });
  });
}
