import type { Hono } from 'hono';
import * as z from 'zod/mini';
import { listAgents } from '../../agents/index.js';
import { API_KEY, authorize } from '../auth.js';
import { badRequest } from '../errors.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { AGENTS, DEFAULT_LIMIT, MAX_LIMIT } from './agents-body.js';
import { decodeAgentCursor, encodeAgentCursor, toWireAgent, wireAgentListSchema } from './agents-wire.js';
import { flagParam, instantParam, limitParam } from './list-query.js';
import { queryParam } from './work-scope.js';

/**
 * GET /v1/agents?limit&page&created_at[gte]&created_at[lte]&include_archived — every agent at
 * its newest version, newest first, in keyset pages; `next_page` is null on the last page.
 * Agents belong to no environment: an API key sees them all.
 */
export function registerAgentsList(app: Hono<AppEnv>): void {
  const instant = z.string().check(z.describe('RFC 3339 date-time'));
  document({
    method: 'get',
    path: AGENTS,
    summary: 'List agents, newest first',
    credentials: ['admin_api_key', 'platform_api_key'],
    query: {
      limit: {
        schema: z.int().check(z.gte(1), z.lte(MAX_LIMIT)),
        description: `page size, default ${DEFAULT_LIMIT}`,
      },
      page: { schema: z.string(), description: 'the next_page cursor of the previous page' },
      'created_at[gte]': { schema: instant, description: 'only agents created at or after this instant' },
      'created_at[lte]': { schema: instant, description: 'only agents created at or before this instant' },
      include_archived: { schema: z.boolean(), description: 'include archived agents (default false)' },
    },
    responses: { 200: { description: 'a page', schema: wireAgentListSchema } },
  });
  app.get(AGENTS, async (c) => {
    await authorize(c, API_KEY);
    const limit = limitParam(c, DEFAULT_LIMIT, MAX_LIMIT);
    const page = queryParam(c, 'page');
    const after = page === undefined ? null : decodeAgentCursor(page);
    if (page !== undefined && after === null) throw badRequest('invalid page cursor');
    const found = await listAgents(c.get('deps').db, {
      after,
      includeArchived: flagParam(c, 'include_archived'),
      createdGte: instantParam(c, 'created_at[gte]'),
      createdLte: instantParam(c, 'created_at[lte]'),
      fetch: limit + 1,
    });
    const data = found.slice(0, limit);
    const last = data[data.length - 1];
    const nextPage = found.length > limit && last ? encodeAgentCursor(last) : null;
    return reply(c, { data: data.map(toWireAgent), next_page: nextPage });
  });
}
