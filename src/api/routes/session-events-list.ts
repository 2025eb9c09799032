import type { Hono } from 'hono';
import * as z from 'zod/mini';
import { listEvents, toWireEvent } from '../../sessions/index.js';
import { ANY_KEY, authorize } from '../auth.js';
import { badRequest } from '../errors.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { arrayParam, createdAtParams, limitParam, orderParam } from './list-query.js';
import { SESSION_EVENTS, visibleSession } from './session-scope.js';
import { decodeEventCursor, encodeEventCursor, wireEventListSchema } from './session-wire.js';
import { queryParam } from './work-scope.js';

export const DEFAULT_LIMIT = 100;
/** The SDK's worker asks for 1,000 and learns of earlier tool calls only from that page. */
export const MAX_LIMIT = 1_000;
const MAX_TYPES = 64;
const EVENT_TYPE = /^[a-z][a-z_]{0,40}(\.[a-z][a-z_]{0,40}){1,3}$/;

/**
 * GET /v1/sessions/{id}/events — the log in sequence order (`asc` by default), in cursor
 * pages. `processed_at` never decreases along the sequence, so the created_at bounds (on
 * processed_at) and the order agree. An environment key reads its own sessions' logs.
 */
export function registerSessionEventsList(app: Hono<AppEnv>): void {
  document({
    method: 'get',
    path: SESSION_EVENTS,
    summary: "List a session's events",
    credentials: ['admin_api_key', 'platform_api_key', 'environment_key'],
    query: {
      limit: {
        schema: z.int().check(z.gte(1), z.lte(MAX_LIMIT)),
        description: `page size, default ${DEFAULT_LIMIT}`,
      },
      page: { schema: z.string(), description: 'the next_page cursor of the previous page' },
      order: { schema: z.enum(['asc', 'desc']), description: 'by sequence (and processed_at); default asc' },
      'types[]': { schema: z.string(), description: 'repeatable: only events of these types' },
      'created_at[gte]': {
        schema: z.string(),
        description: 'on processed_at, RFC 3339; also [gt], [lt], [lte]',
      },
    },
    responses: { 200: { description: 'a page', schema: wireEventListSchema } },
  });
  app.get(SESSION_EVENTS, async (c) => {
    const caller = await authorize(c, ANY_KEY);
    const limit = limitParam(c, DEFAULT_LIMIT, MAX_LIMIT);
    const order = orderParam(c, 'asc');
    const page = queryParam(c, 'page');
    const afterSeq = page === undefined ? null : decodeEventCursor(page);
    if (page !== undefined && afterSeq === null) throw badRequest('invalid page cursor');
    const types = arrayParam(c, 'types');
    if (types.length > MAX_TYPES) throw badRequest(`types: at most ${MAX_TYPES}`);
    // An event type is dotted lowercase words (`agent.tool_use`); anything else never reaches SQL.
    if (types.some((t) => !EVENT_TYPE.test(t))) throw badRequest('types: not an event type');
    const createdAt = createdAtParams(c);
    const session = await visibleSession(c, caller);
    const found = await listEvents(c.get('deps').db, session.id, {
      order,
      afterSeq,
      types,
      createdAt,
      fetch: limit + 1,
    });
    const data = found.slice(0, limit);
    const last = data.at(-1);
    return reply(c, {
      data: data.map(toWireEvent),
      next_page: found.length > limit && last ? encodeEventCursor(last) : null,
    });
  });
}
