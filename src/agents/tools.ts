/**
 * An agent's tools: the built-in `agent_toolset_20260401` and custom tools, from what a request
 * sends to what the wire shows. A toolset resolves to its default config and one config per
 * tool of the set, each with the effective `enabled` and `permission_policy` (a tool's own
 * setting, else the set's default, else `enabled: true` and `always_allow`); a custom tool is
 * kept as sent.
 *
 * web_fetch and web_search are tools of the set that no environment worker runs (the SDK's
 * runner implements the other six), so a session never offers them to the model: they resolve
 * to disabled whatever the default says, and enabling one explicitly is refused rather than
 * shown as enabled and silently not offered.
 */
import { AgentDefinitionError } from './errors.js';
import {
  type AgentToolset,
  type CustomTool,
  type PermissionPolicy,
  TOOLSET_TOOLS,
  TOOLSET_TYPE,
  type Tool,
  type ToolsetToolName,
} from './types.js';

/** Tools across all toolsets and custom tools; a toolset counts as the tools it holds. */
export const MAX_TOOLS = 256;

/** Tools of the set that no worker runs: always disabled (see above). */
export const UNRUNNABLE_TOOLSET_TOOLS: readonly ToolsetToolName[] = ['web_fetch', 'web_search'];

/** The agent toolset's own default: its tools run without asking. */
const DEFAULT_POLICY: PermissionPolicy = { type: 'always_allow' };

export interface ToolConfigParams {
  name: ToolsetToolName;
  type?: ToolsetToolName;
  enabled?: boolean | null;
  permission_policy?: PermissionPolicy | null;
}

export interface ToolsetParams {
  type: typeof TOOLSET_TYPE;
  configs?: ToolConfigParams[];
  default_config?: { enabled?: boolean | null; permission_policy?: PermissionPolicy | null } | null;
}

export type ToolParams = ToolsetParams | CustomTool;

/**
 * The tools `params` describe, resolved, or an `AgentDefinitionError` naming the first one
 * Leasehold cannot give the model: a second toolset, a tool configured twice, two tools of one
 * name (a custom tool may not take the name of a toolset's tool), more than `MAX_TOOLS`.
 */
export function resolveTools(params: ToolParams[] | null | undefined): Tool[] {
  const tools = (params ?? []).map((p, i) =>
    p.type === TOOLSET_TYPE ? resolveToolset(p, i) : copyCustom(p),
  );
  checkNames(tools);
  const count = tools.reduce((n, t) => n + (t.type === TOOLSET_TYPE ? t.configs.length : 1), 0);
  if (count > MAX_TOOLS)
    throw new AgentDefinitionError(
      'tools',
      `${count} tools is more than ${MAX_TOOLS} (a toolset counts as its ${TOOLSET_TOOLS.length} tools)`,
    );
  return tools;
}

function resolveToolset(params: ToolsetParams, at: number): AgentToolset {
  const defaults = {
    enabled: params.default_config?.enabled ?? true,
    permission_policy: policy(params.default_config?.permission_policy ?? DEFAULT_POLICY),
  };
  const own = new Map<ToolsetToolName, ToolConfigParams>();
  for (const [i, config] of (params.configs ?? []).entries()) {
    const field = `tools.${at}.configs.${i}`;
    if (config.type !== undefined && config.type !== config.name)
      throw new AgentDefinitionError(
        `${field}.type`,
        `must be "${config.name}", the tool's name, or omitted`,
      );
    if (own.has(config.name))
      throw new AgentDefinitionError(`${field}.name`, `"${config.name}" is configured more than once`);
    if (config.enabled === true && UNRUNNABLE_TOOLSET_TOOLS.includes(config.name))
      throw new AgentDefinitionError(
        `${field}.enabled`,
        `${config.name} is not supported: no environment worker runs it; omit the config or send enabled: false`,
      );
    own.set(config.name, config);
  }
  return {
    type: TOOLSET_TYPE,
    default_config: defaults,
    configs: TOOLSET_TOOLS.map((name) => ({
      type: name,
      name,
      enabled: !UNRUNNABLE_TOOLSET_TOOLS.includes(name) && (own.get(name)?.enabled ?? defaults.enabled),
      permission_policy: policy(own.get(name)?.permission_policy ?? defaults.permission_policy),
    })),
  };
}

/** A fresh copy, so no resolved definition shares an object with a request or another definition. */
const policy = (p: PermissionPolicy): PermissionPolicy => ({ type: p.type });

function copyCustom(tool: CustomTool): CustomTool {
  return {
    type: 'custom',
    name: tool.name,
    description: tool.description,
    input_schema: structuredClone(tool.input_schema),
  };
}

/** Every name the model would be offered is offered once. */
function checkNames(tools: Tool[]): void {
  const owner = new Map<string, number>();
  for (const [i, tool] of tools.entries()) {
    const names = tool.type === TOOLSET_TYPE ? tool.configs.map((c) => c.name) : [tool.name];
    for (const name of names) {
      const first = owner.get(name);
      if (first !== undefined) {
        const field = tool.type === TOOLSET_TYPE ? `tools.${i}` : `tools.${i}.name`;
        throw new AgentDefinitionError(field, `duplicate tool name "${name}" (also at tools.${first})`);
      }
      owner.set(name, i);
    }
  }
}
