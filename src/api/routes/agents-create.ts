import type { Hono } from 'hono';
import { createAgent } from '../../agents/index.js';
import { API_KEY, authorize } from '../auth.js';
import { parseWith, readJson } from '../body.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { AGENTS, createAgentBody } from './agents-body.js';
import { toWireAgent, wireAgentSchema } from './agents-wire.js';

/**
 * POST /v1/agents — creates an agent at version 1, answered 200 like the official API's
 * creates. A model id alone resolves to a full model config; a toolset to one config per tool.
 */
export function registerAgentsCreate(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: AGENTS,
    summary: 'Create an agent',
    credentials: ['admin_api_key', 'platform_api_key'],
    body: createAgentBody,
    responses: { 200: { description: 'the agent, at version 1', schema: wireAgentSchema } },
  });
  app.post(AGENTS, async (c) => {
    await authorize(c, API_KEY);
    const body = parseWith(createAgentBody, await readJson(c));
    const agent = await createAgent(c.get('deps').db, body);
    return reply(c, toWireAgent(agent));
  });
}
