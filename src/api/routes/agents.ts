/**
 * The agents API (admin and platform API keys): agents and their versions, the definitions
 * sessions run. One endpoint per file. Literal segments (`archive`, `versions`) never collide
 * with `{id}`: each path differs from the others in its number of segments or its method.
 */
import type { Hono } from 'hono';
import type { AppEnv } from '../types.js';
import { registerAgentsArchive } from './agents-archive.js';
import { registerAgentsCreate } from './agents-create.js';
import { registerAgentsGet } from './agents-get.js';
import { registerAgentsList } from './agents-list.js';
import { registerAgentsUpdate } from './agents-update.js';
import { registerAgentsVersions } from './agents-versions.js';

export function registerAgents(app: Hono<AppEnv>): void {
  registerAgentsCreate(app);
  registerAgentsList(app);
  registerAgentsGet(app);
  registerAgentsUpdate(app);
  registerAgentsArchive(app);
  registerAgentsVersions(app);
}
