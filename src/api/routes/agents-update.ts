import type { Hono } from 'hono';
import { updateAgent } from '../../agents/index.js';
import { API_KEY, authorize } from '../auth.js';
import { parseWith, readJson } from '../body.js';
import { document, errorEnvelope } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { AGENT, agentNotFound, agentParam, updateAgentBody } from './agents-body.js';
import { toWireAgent, wireAgentSchema } from './agents-wire.js';

/**
 * POST /v1/agents/{id} — writes the patched definition as the next version and answers it. A
 * patch that changes nothing writes no version and answers the agent as it is. `version` in
 * the body makes the update conditional on the agent still being at that version (409 when it
 * is not, and the SDK is told not to retry). An archived agent is read-only (400). An empty
 * body is an empty patch.
 */
export function registerAgentsUpdate(app: Hono<AppEnv>): void {
  document({
    method: 'post',
    path: AGENT,
    summary: 'Update an agent (a new version when anything changes)',
    credentials: ['admin_api_key', 'platform_api_key'],
    body: updateAgentBody,
    responses: {
      200: { description: 'the agent at its newest version', schema: wireAgentSchema },
      400: { description: 'a definition Leasehold cannot run, or an archived agent', schema: errorEnvelope },
      409: { description: 'the agent is no longer at the version the body names', schema: errorEnvelope },
    },
  });
  app.post(AGENT, async (c) => {
    await authorize(c, API_KEY);
    const id = agentParam(c);
    // The fields Leasehold refuses can only have passed as their empty values: nothing to apply.
    const body = parseWith(updateAgentBody, (await readJson(c)) ?? {});
    const agent = await updateAgent(c.get('deps').db, id, body, body.version);
    if (!agent) throw agentNotFound();
    return reply(c, toWireAgent(agent));
  });
}
