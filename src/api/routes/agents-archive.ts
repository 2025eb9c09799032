import type { Hono } from 'hono';
import { archiveAgent } from '../../agents/index.js';
import { API_KEY, authorize } from '../auth.js';
import { drainBody } from '../body.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { AGENT, agentNotFound, agentParam } from './agents-body.js';
import { toWireAgent, wireAgentSchema } from './agents-wire.js';

/**
 * POST /v1/agents/{id}/archive — sets `archived_at` once (archiving again changes nothing).
 * The agent becomes read-only and new sessions refuse it; its versions stay readable and
 * sessions already running keep their snapshot. The SDK sends no body and none is read.
 */
export function registerAgentsArchive(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: `${AGENT}/archive`,
    summary: 'Archive an agent',
    credentials: ['admin_api_key', 'platform_api_key'],
    responses: { 200: { description: 'the archived agent, at its newest version', schema: wireAgentSchema } },
  });
  app.post(`${AGENT}/archive`, async (c) => {
    await authorize(c, API_KEY);
    await drainBody(c);
    const agent = await archiveAgent(c.get('deps').db, agentParam(c));
    if (!agent) throw agentNotFound();
    return reply(c, toWireAgent(agent));
  });
}
