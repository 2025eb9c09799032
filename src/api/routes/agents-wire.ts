/**
 * The agent on the wire — the SDK's `BetaManagedAgentsAgent`, field by field — and the cursors
 * of the agents list and of an agent's versions list.
 */
import * as z from 'zod/mini';
import {
  type Agent,
  type AgentCursor,
  EFFORT_LEVELS,
  MAX_VERSION,
  TOOLSET_TOOLS,
} from '../../agents/index.js';
import { fromBase64UrlText, toBase64Url } from '../../base64.js';
import { decodeKeysetCursor, encodeKeysetCursor } from '../cursor.js';

export function toWireAgent(a: Agent) {
  const d = a.definition;
  return {
    type: 'agent' as const,
    id: a.id,
    version: a.version,
    name: d.name,
    description: d.description,
    model: d.model,
    system: d.system,
    tools: d.tools,
    mcp_servers: d.mcp_servers,
    skills: d.skills,
    multiagent: d.multiagent,
    execution_identity: d.execution_identity,
    metadata: d.metadata,
    archived_at: a.archivedAt,
    created_at: a.createdAt,
    updated_at: a.updatedAt,
  };
}

const stamp = z.string().check(z.describe('RFC 3339 UTC, microseconds, trailing zeros trimmed'));
const policy = z.object({ type: z.enum(['always_allow', 'always_ask', 'auto']) });
const toolName = z.enum(TOOLSET_TOOLS);
const wireToolSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('agent_toolset_20260401'),
    default_config: z.object({ enabled: z.boolean(), permission_policy: policy }),
    configs: z.array(
      z.object({ type: toolName, name: toolName, enabled: z.boolean(), permission_policy: policy }),
    ),
  }),
  z.object({
    type: z.literal('custom'),
    name: z.string(),
    description: z.string(),
    input_schema: z.looseObject({ type: z.literal('object') }),
  }),
]);
const wireModelSchema = z.object({
  id: z.string(),
  speed: z.enum(['standard', 'fast']),
  effort: z.optional(z.object({ type: z.enum(EFFORT_LEVELS) })),
  inference_geo: z.optional(z.string()),
});
export const wireAgentSchema = z.object({
  type: z.literal('agent'),
  id: z.string(),
  version: z.int().check(z.gte(1)),
  name: z.string(),
  description: z.nullable(z.string()),
  model: wireModelSchema,
  system: z.nullable(z.string()),
  tools: z.array(wireToolSchema),
  mcp_servers: z.array(z.never()).check(z.describe('always empty: not supported')),
  skills: z.array(z.never()).check(z.describe('always empty: not supported')),
  multiagent: z.null(),
  execution_identity: z.object({ type: z.literal('service_account') }),
  metadata: z.record(z.string(), z.string()),
  archived_at: z.nullable(stamp),
  created_at: stamp,
  updated_at: stamp.check(
    z.describe('when this version was written (version 1: created_at); archiving leaves it'),
  ),
});
export const wireAgentListSchema = z.object({
  data: z.array(wireAgentSchema),
  next_page: z.nullable(z.string()),
});

/** Opaque list cursor of the agents list (see cursor.ts). */
export const encodeAgentCursor = (c: AgentCursor): string => encodeKeysetCursor('agt1', c);
export const decodeAgentCursor = (page: string): AgentCursor | null =>
  decodeKeysetCursor('agt1', 'agent', page);

/**
 * Opaque cursor of one agent's versions list: the last version of the page, bound to the agent,
 * so a cursor of one agent's versions is refused on another's.
 */
export const encodeVersionCursor = (agentId: string, version: number): string =>
  toBase64Url(`agv1|${agentId}|${version}`);

/** The version to continue below, or null when `page` is not a cursor of this agent's versions. */
export function decodeVersionCursor(agentId: string, page: string): number | null {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(page)) return null;
  let text: string;
  try {
    text = fromBase64UrlText(page);
  } catch {
    return null;
  }
  const [tag, id, version, ...rest] = text.split('|');
  if (tag !== 'agv1' || id !== agentId || rest.length > 0 || !/^[1-9]\d{0,9}$/.test(version ?? ''))
    return null;
  const n = Number(version);
  return n <= MAX_VERSION ? n : null;
}
