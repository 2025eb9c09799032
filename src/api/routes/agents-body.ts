/**
 * Requests of the agent endpoints: paths, query parameters and bodies, as the SDK's
 * `AgentCreateParams` / `AgentUpdateParams` send them. Unknown fields are refused at every
 * level, as the environment endpoints do. What an agent may hold that Leasehold cannot run —
 * MCP servers and toolsets, skills, multiagent orchestration, another execution identity — is
 * in the schema only as its empty value, so sending anything else is a 400 naming the field.
 */
import type { Context } from 'hono';
import { z } from 'zod';
import { EFFORT_LEVELS, MAX_TOOLS, MAX_VERSION, TOOLSET_TOOLS, TOOLSET_TYPE } from '../../agents/index.js';
import { MAX_METADATA_KEY, MAX_METADATA_PAIRS, MAX_METADATA_VALUE } from '../../environments/index.js';
import { isMintedId } from '../../ids.js';
import { badRequest, notFound } from '../errors.js';
import type { AppEnv } from '../types.js';
import { MAX_DESCRIPTION, MAX_NAME } from './environment-body.js';
import { queryParam } from './work-scope.js';

export const AGENTS = '/v1/agents';
export const AGENT = `${AGENTS}/:agentId`;

/** A system prompt's length in characters: a long prompt, not a document store. */
export const MAX_SYSTEM = 100_000;
const MAX_MODEL_ID = 128;
const MAX_TOOL_DESCRIPTION = 10_000;
const MAX_INFERENCE_GEO = 64;

export const agentNotFound = () => notFound('agent not found');

/** The path's agent id, or a 404 when it is not one Leasehold mints (it never reaches SQL). */
export function agentParam(c: Context<AppEnv>): string {
  const id = c.req.param('agentId') ?? '';
  if (!isMintedId(id, 'agent')) throw agentNotFound();
  return id;
}

const name = z.string().trim().min(1).max(MAX_NAME).describe(`1–${MAX_NAME} characters after trimming`);
const description = z
  .string()
  .max(MAX_DESCRIPTION)
  .describe(`at most ${MAX_DESCRIPTION} characters; "" is none`);
const system = z.string().max(MAX_SYSTEM).describe(`at most ${MAX_SYSTEM} characters; "" is none`);
const modelId = z.string().min(1).max(MAX_MODEL_ID);
const effort = z.enum(EFFORT_LEVELS);
const model = z
  .union(
    [
      modelId,
      z.strictObject({
        id: modelId,
        effort: z
          .union([effort, z.strictObject({ type: effort })], {
            error: `one of ${EFFORT_LEVELS.join(', ')}, bare or as {"type": …}`,
          })
          .nullable()
          .optional(),
        inference_geo: z.string().max(MAX_INFERENCE_GEO).nullable().optional(),
        speed: z.enum(['standard', 'fast']).nullable().optional(),
      }),
    ],
    { error: modelProblem },
  )
  .describe('a model id, or {id, effort?, inference_geo?, speed?}');

/** What is wrong with a model: for an object, its own first problem, which the union would hide. */
function modelProblem(issue: z.core.$ZodRawIssue): string | undefined {
  if (issue.code !== 'invalid_union') return undefined;
  const inner = typeof issue.input === 'object' && issue.input !== null ? issue.errors[1]?.[0] : undefined;
  if (!inner) return 'a model id, or a model config {id, effort?, inference_geo?, speed?}';
  return inner.path.length ? `${inner.path.join('.')}: ${inner.message}` : inner.message;
}

const policy = z.strictObject({ type: z.enum(['always_allow', 'always_ask', 'auto']) });
const toolName = z.enum(TOOLSET_TOOLS, {
  error: `not a tool of ${TOOLSET_TYPE}, whose tools are ${TOOLSET_TOOLS.join(', ')}`,
});
const toolset = z.strictObject({
  type: z.literal(TOOLSET_TYPE),
  configs: z
    .array(
      z.strictObject({
        name: toolName,
        type: toolName.optional().describe('the tool name again, if sent'),
        enabled: z.boolean().nullable().optional(),
        permission_policy: policy.nullable().optional(),
      }),
    )
    .max(MAX_TOOLS)
    .optional()
    .describe('per-tool overrides of default_config; each tool at most once'),
  default_config: z
    .strictObject({
      enabled: z.boolean().nullable().optional(),
      permission_policy: policy.nullable().optional(),
    })
    .nullable()
    .optional()
    .describe('default: enabled, always_allow'),
});
const customTool = z.strictObject({
  type: z.literal('custom'),
  name: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, '1–128 letters, digits, underscores or hyphens'),
  description: z.string().max(MAX_TOOL_DESCRIPTION),
  input_schema: z.looseObject({
    type: z.literal('object'),
    properties: z.record(z.string(), z.unknown()).nullable().optional(),
    required: z.array(z.string()).nullable().optional(),
  }),
});
const tools = z
  .array(
    z.discriminatedUnion('type', [toolset, customTool], {
      error: (issue) =>
        issue.code !== 'invalid_union'
          ? undefined
          : (issue.input as { type?: unknown } | null)?.type === 'mcp_toolset'
            ? 'mcp_toolset is not supported: Leasehold connects agents to no MCP server'
            : `must be "${TOOLSET_TYPE}" or "custom"`,
    }),
  )
  .max(MAX_TOOLS)
  .describe(`at most ${MAX_TOOLS} tools, a toolset counting as its ${TOOLSET_TOOLS.length}; names unique`);

const metadataNote = `at most ${MAX_METADATA_PAIRS} pairs; keys 1–${MAX_METADATA_KEY} characters, values at most ${MAX_METADATA_VALUE} characters`;

/** What Leasehold's agents cannot do, each accepted only as its empty value. */
const refused = {
  mcp_servers: z
    .array(z.unknown())
    .max(0, 'MCP servers are not supported: Leasehold connects agents to no MCP server; omit it or send []')
    .nullable()
    .optional(),
  skills: z
    .array(z.unknown())
    .max(0, 'skills are not supported: Leasehold loads no skills into a session; omit it or send []')
    .nullable()
    .optional(),
  multiagent: z
    .null({
      error: 'multiagent orchestration is not supported: Leasehold runs one thread; omit it or send null',
    })
    .optional(),
  execution_identity: z
    .strictObject({
      type: z.literal('service_account', {
        error: 'only {"type":"service_account"} is supported: Leasehold runs agents under no other principal',
      }),
    })
    .nullable()
    .optional(),
};

export const createAgentBody = z.strictObject({
  name,
  model,
  description: description.nullable().optional(),
  system: system.nullable().optional(),
  tools: tools.nullable().optional(),
  metadata: z.record(z.string(), z.string()).optional().describe(metadataNote),
  ...refused,
});

export const updateAgentBody = z.strictObject({
  version: z
    .int()
    .min(1)
    .max(MAX_VERSION)
    .optional()
    .describe(
      'the version this update was made from: any other current version is a 409; omit to apply unconditionally',
    ),
  name: name.optional().describe('omit to keep; cannot be cleared'),
  model: model
    .optional()
    .describe('omit to keep; replaces the stored model whole, but an omitted effort keeps its value'),
  description: description.nullable().optional().describe('omit to keep; null or "" clears'),
  system: system.nullable().optional().describe('omit to keep; null or "" clears'),
  tools: tools
    .nullable()
    .optional()
    .describe('omit to keep; replaces the stored tools whole; null or [] clears'),
  metadata: z
    .record(z.string(), z.string().nullable())
    .nullable()
    .optional()
    .describe(`null deletes a key, omitted keys stay; ${metadataNote} after the update`),
  ...refused,
});

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

/** `version`: a version number, or undefined when absent. */
export function versionQuery(c: Context<AppEnv>): number | undefined {
  const text = queryParam(c, 'version');
  if (text === undefined) return undefined;
  const version = Number(text);
  if (!/^\d{1,10}$/.test(text) || version < 1 || version > MAX_VERSION)
    throw badRequest(`version must be an integer between 1 and ${MAX_VERSION}`);
  return version;
}
