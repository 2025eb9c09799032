import type { Hono } from 'hono';
import * as z from 'zod/mini';
import { getAgent, MAX_VERSION } from '../../agents/index.js';
import { API_KEY, authorize } from '../auth.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { AGENT, agentNotFound, agentParam, versionQuery } from './agents-body.js';
import { toWireAgent, wireAgentSchema } from './agents-wire.js';

/** GET /v1/agents/{id}?version — the newest version, or the one asked for; archived or not. */
export function registerAgentsGet(app: Hono<AppEnv>): void {
  document({
    method: 'get',
    path: AGENT,
    summary: 'Retrieve an agent, at its newest version or at another',
    credentials: ['admin_api_key', 'platform_api_key'],
    query: {
      version: {
        schema: z.int().check(z.gte(1), z.lte(MAX_VERSION)),
        description: 'a version; default the newest',
      },
    },
    responses: { 200: { description: 'the agent at that version', schema: wireAgentSchema } },
  });
  app.get(AGENT, async (c) => {
    await authorize(c, API_KEY);
    const agent = await getAgent(c.get('deps').db, agentParam(c), versionQuery(c));
    if (!agent) throw agentNotFound();
    return reply(c, toWireAgent(agent));
  });
}
