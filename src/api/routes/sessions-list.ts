import type { Hono } from 'hono';
import * as z from 'zod/mini';
import { isMintedId } from '../../ids.js';
import { listSessions, type SessionStatus } from '../../sessions/index.js';
import { API_KEY, authorize } from '../auth.js';
import { badRequest } from '../errors.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { arrayParam, createdAtParams, flagParam, limitParam, orderParam } from './list-query.js';
import { SESSIONS } from './session-scope.js';
import {
  decodeSessionCursor,
  encodeSessionCursor,
  toWireSession,
  wireSessionListSchema,
} from './session-wire.js';
import { queryParam } from './work-scope.js';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;
const STATUSES: readonly SessionStatus[] = ['idle', 'running', 'rescheduling', 'terminated'];

/**
 * GET /v1/sessions — the sessions the API created, newest first by default, in keyset pages
 * (`next_page` null on the last; `prev_page` always null: pages go one way). Filters: agent
 * and version, statuses, created_at bounds; archived ones only with `include_archived`.
 */
export function registerSessionsList(app: Hono<AppEnv>): void {
  document({
    method: 'get',
    path: SESSIONS,
    summary: 'List sessions',
    credentials: ['admin_api_key', 'platform_api_key'],
    query: {
      limit: {
        schema: z.int().check(z.gte(1), z.lte(MAX_LIMIT)),
        description: `page size, default ${DEFAULT_LIMIT}`,
      },
      page: { schema: z.string(), description: 'the next_page cursor of the previous page' },
      order: { schema: z.enum(['asc', 'desc']), description: 'by created_at; default desc' },
      agent_id: { schema: z.string(), description: 'sessions of this agent' },
      agent_version: { schema: z.int().check(z.gte(1)), description: 'with agent_id: of this version' },
      'statuses[]': {
        schema: z.enum(['idle', 'running', 'rescheduling', 'terminated']),
        description: 'repeatable',
      },
      include_archived: { schema: z.boolean(), description: 'default false' },
      'created_at[gte]': { schema: z.string(), description: 'RFC 3339; also [gt], [lt], [lte]' },
      memory_store_id: {
        schema: z.string(),
        description: 'no session here has a memory store: always empty',
      },
      deployment_id: {
        schema: z.string(),
        description: 'no session here came from a deployment: always empty',
      },
    },
    responses: { 200: { description: 'a page', schema: wireSessionListSchema } },
  });
  app.get(SESSIONS, async (c) => {
    await authorize(c, API_KEY);
    const limit = limitParam(c, DEFAULT_LIMIT, MAX_LIMIT);
    const order = orderParam(c, 'desc');
    const page = queryParam(c, 'page');
    const after = page === undefined ? null : decodeSessionCursor(page);
    if (page !== undefined && after === null) throw badRequest('invalid page cursor');
    const statuses = arrayParam(c, 'statuses');
    for (const s of statuses) {
      if (!STATUSES.includes(s as SessionStatus))
        throw badRequest(`statuses: ${s.slice(0, 32)} is not a session status`);
    }
    // No session here has a memory store or came from a deployment: either filter matches none.
    if (queryParam(c, 'memory_store_id') !== undefined || queryParam(c, 'deployment_id') !== undefined) {
      return reply(c, { data: [], next_page: null, prev_page: null });
    }
    const agentId = queryParam(c, 'agent_id');
    // Only an id Leasehold mints can name an agent; anything else never reaches SQL.
    if (agentId !== undefined && !isMintedId(agentId, 'agent'))
      throw badRequest('agent_id is not an agent id');
    const versionText = queryParam(c, 'agent_version');
    if (versionText !== undefined && !/^[1-9]\d{0,8}$/.test(versionText))
      throw badRequest('agent_version must be a positive integer');
    const found = await listSessions(c.get('deps').db, {
      order,
      after,
      includeArchived: flagParam(c, 'include_archived'),
      agentId,
      agentVersion: agentId !== undefined && versionText !== undefined ? Number(versionText) : undefined,
      statuses: statuses as SessionStatus[],
      createdAt: createdAtParams(c),
      fetch: limit + 1,
    });
    const data = found.slice(0, limit);
    const last = data.at(-1);
    return reply(c, {
      data: data.map(toWireSession),
      next_page: found.length > limit && last ? encodeSessionCursor(last) : null,
      prev_page: null,
    });
  });
}
