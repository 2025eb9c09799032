import type { Hono } from 'hono';
import * as z from 'zod/mini';
import { listAgentVersions } from '../../agents/index.js';
import { API_KEY, authorize } from '../auth.js';
import { badRequest } from '../errors.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { AGENT, agentNotFound, agentParam, DEFAULT_LIMIT, MAX_LIMIT } from './agents-body.js';
import { decodeVersionCursor, encodeVersionCursor, toWireAgent, wireAgentListSchema } from './agents-wire.js';
import { limitParam } from './list-query.js';
import { queryParam } from './work-scope.js';

/**
 * GET /v1/agents/{id}/versions?limit&page — every version of the agent, newest first, each as
 * the agent was at that version (archived agents too). `next_page` is null on the last page.
 */
export function registerAgentsVersions(app: Hono<AppEnv>): void {
  document({
    method: 'get',
    path: `${AGENT}/versions`,
    summary: "List an agent's versions, newest first",
    credentials: ['admin_api_key', 'platform_api_key'],
    query: {
      limit: {
        schema: z.int().check(z.gte(1), z.lte(MAX_LIMIT)),
        description: `page size, default ${DEFAULT_LIMIT}`,
      },
      page: { schema: z.string(), description: 'the next_page cursor of the previous page' },
    },
    responses: { 200: { description: 'a page of versions', schema: wireAgentListSchema } },
  });
  app.get(`${AGENT}/versions`, async (c) => {
    await authorize(c, API_KEY);
    const id = agentParam(c);
    const limit = limitParam(c, DEFAULT_LIMIT, MAX_LIMIT);
    const page = queryParam(c, 'page');
    const before = page === undefined ? null : decodeVersionCursor(id, page);
    if (page !== undefined && before === null) throw badRequest('invalid page cursor');
    const found = await listAgentVersions(c.get('deps').db, id, { before, fetch: limit + 1 });
    if (!found) throw agentNotFound();
    const data = found.slice(0, limit);
    const last = data[data.length - 1];
    const nextPage = found.length > limit && last ? encodeVersionCursor(id, last.version) : null;
    return reply(c, { data: data.map(toWireAgent), next_page: nextPage });
  });
}
