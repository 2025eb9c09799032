/**
 * Requests of the agent endpoints: paths, query parameters and bodies, as the SDK's
 * `AgentCreateParams` / `AgentUpdateParams` send them. Unknown fields are refused at every
 * level, as the environment endpoints do. What an agent may hold that Leasehold cannot run —
 * MCP servers and toolsets, skills, multiagent orchestration, another execution identity — is
 * in the schema only as its empty value, so sending anything else is a 400 naming the field.
 */
import type { Context } from 'hono';
import * as z from 'zod/mini';
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
const MAX_SYSTEM = 100_000;
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

const name = z
  .string()
  .check(
    z.trim(),
    z.minLength(1),
    z.maxLength(MAX_NAME),
    z.describe(`1–${MAX_NAME} characters after trimming`),
  );
const description = z
  .string()
  .check(z.maxLength(MAX_DESCRIPTION), z.describe(`at most ${MAX_DESCRIPTION} characters; "" is none`));
const system = z
  .string()
  .check(z.maxLength(MAX_SYSTEM), z.describe(`at most ${MAX_SYSTEM} characters; "" is none`));
const modelId = z.string().check(z.minLength(1), z.maxLength(MAX_MODEL_ID));
const effort = z.enum(EFFORT_LEVELS);
const model = z
  .union(
    [
      modelId,
      z.strictObject({
        id: modelId,
        effort: z.optional(
          z.nullable(
            z.union([effort, z.strictObject({ type: effort })], {
              error: `one of ${EFFORT_LEVELS.join(', ')}, bare or as {"type": …}`,
            }),
          ),
        ),
        inference_geo: z.optional(z.nullable(z.string().check(z.maxLength(MAX_INFERENCE_GEO)))),
        speed: z.optional(z.nullable(z.enum(['standard', 'fast']))),
      }),
    ],
    { error: modelProblem },
  )
  .check(z.describe('a model id, or {id, effort?, inference_geo?, speed?}'));

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
    .optional(
      z
        .array(
          z.strictObject({
            name: toolName,
            type: z.optional(toolName).check(z.describe('the tool name again, if sent')),
            enabled: z.optional(z.nullable(z.boolean())),
            permission_policy: z.optional(z.nullable(policy)),
          }),
        )
        .check(z.maxLength(MAX_TOOLS)),
    )
    .check(z.describe('per-tool overrides of default_config; each tool at most once')),
  default_config: z
    .optional(
      z.nullable(
        z.strictObject({
          enabled: z.optional(z.nullable(z.boolean())),
          permission_policy: z.optional(z.nullable(policy)),
        }),
      ),
    )
    .check(z.describe('default: enabled, always_allow')),
});
const customTool = z.strictObject({
  type: z.literal('custom'),
  name: z.string().check(z.regex(/^[A-Za-z0-9_-]{1,128}$/, '1–128 letters, digits, underscores or hyphens')),
  description: z.string().check(z.maxLength(MAX_TOOL_DESCRIPTION)),
  input_schema: z.looseObject({
    type: z.literal('object'),
    properties: z.optional(z.nullable(z.record(z.string(), z.unknown()))),
    required: z.optional(z.nullable(z.array(z.string()))),
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
  .check(
    z.maxLength(MAX_TOOLS),
    z.describe(`at most ${MAX_TOOLS} tools, a toolset counting as its ${TOOLSET_TOOLS.length}; names unique`),
  );

const metadataNote = `at most ${MAX_METADATA_PAIRS} pairs; keys 1–${MAX_METADATA_KEY} characters, values at most ${MAX_METADATA_VALUE} characters`;

/** What Leasehold's agents cannot do, each accepted only as its empty value. */
const refused = {
  mcp_servers: z.optional(
    z.nullable(
      z
        .array(z.unknown())
        .check(
          z.maxLength(
            0,
            'MCP servers are not supported: Leasehold connects agents to no MCP server; omit it or send []',
          ),
        ),
    ),
  ),
  skills: z.optional(
    z.nullable(
      z
        .array(z.unknown())
        .check(
          z.maxLength(
            0,
            'skills are not supported: Leasehold loads no skills into a session; omit it or send []',
          ),
        ),
    ),
  ),
  multiagent: z.optional(
    z.null({
      error: 'multiagent orchestration is not supported: Leasehold runs one thread; omit it or send null',
    }),
  ),
  execution_identity: z.optional(
    z.nullable(
      z.strictObject({
        type: z.literal('service_account', {
          error:
            'only {"type":"service_account"} is supported: Leasehold runs agents under no other principal',
        }),
      }),
    ),
  ),
};

export const createAgentBody = z.strictObject({
  name,
  model,
  description: z.optional(z.nullable(description)),
  system: z.optional(z.nullable(system)),
  tools: z.optional(z.nullable(tools)),
  metadata: z.optional(z.record(z.string(), z.string())).check(z.describe(metadataNote)),
  ...refused,
});

export const updateAgentBody = z.strictObject({
  version: z
    .optional(z.int().check(z.gte(1), z.lte(MAX_VERSION)))
    .check(
      z.describe(
        'the version this update was made from: any other current version is a 409; omit to apply unconditionally',
      ),
    ),
  name: z.optional(name).check(z.describe('omit to keep; cannot be cleared')),
  model: z
    .optional(model)
    .check(
      z.describe('omit to keep; replaces the stored model whole, but an omitted effort keeps its value'),
    ),
  description: z.optional(z.nullable(description)).check(z.describe('omit to keep; null or "" clears')),
  system: z.optional(z.nullable(system)).check(z.describe('omit to keep; null or "" clears')),
  tools: z
    .optional(z.nullable(tools))
    .check(z.describe('omit to keep; replaces the stored tools whole; null or [] clears')),
  metadata: z
    .optional(z.nullable(z.record(z.string(), z.nullable(z.string()))))
    .check(z.describe(`null deletes a key, omitted keys stay; ${metadataNote} after the update`)),
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
