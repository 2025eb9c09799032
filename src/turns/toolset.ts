/**
 * An agent's tools as the model sees them, and the permission each call gets.
 *
 * Glossary:
 * - agent tools: the resolved `BetaManagedAgentsAgent.tools` — an `agent_toolset_20260401`
 *   (built-in tools, each enabled or not and under a permission policy), `custom` tools (run by
 *   the API client) and `mcp_toolset`s.
 * - tool definition: `{name, description, input_schema}` as the Messages API takes it.
 *
 * Which built-in tools are offered: the ones the environment worker can run — the SDK's runner
 * (`@anthropic-ai/sdk/tools/agent-toolset/node`) implements bash, read, write, edit, glob and
 * grep. The toolset also names web_fetch and web_search, but no runner here implements them: a
 * model that called one would wait for a result that never comes, so they are never offered
 * (and a call to one is denied). MCP toolsets are not offered either: Leasehold has no MCP
 * client yet. The schemas below are written out by hand so src/ does not import the SDK;
 * test/turns/toolset.test.ts fails when they drift from the runner's.
 *
 * When two tools share a name (the agents API should refuse that), the first one in the
 * agent's list wins, in both toolDefinitions and evaluatePermission.
 */
import type { ToolDefinition } from './model.js';

const AGENT_TOOLSET_TYPE = 'agent_toolset_20260401';

export type PermissionPolicy = { type: 'always_allow' } | { type: 'always_ask' } | { type: 'auto' };

export interface ToolsetToolConfig {
  name: string;
  enabled: boolean;
  permission_policy: PermissionPolicy;
  type?: string;
}

export interface AgentToolset {
  type: typeof AGENT_TOOLSET_TYPE;
  default_config: { enabled: boolean; permission_policy: PermissionPolicy };
  configs: readonly ToolsetToolConfig[];
}

export interface CustomTool {
  type: 'custom';
  name: string;
  description: string;
  input_schema: ToolDefinition['input_schema'];
}

export interface McpToolset {
  type: 'mcp_toolset';
  mcp_server_name: string;
}

export type AgentTool = AgentToolset | CustomTool | McpToolset;

/** The built-in tools the worker's runner implements, in its order, as its runnable tools define them. */
export const AGENT_TOOLSET_TOOLS: readonly ToolDefinition[] = [
  {
    name: 'bash',
    description: 'Run a bash command in a persistent shell. State (cwd, env vars) persists across calls.',
    input_schema: {
      type: 'object',
      properties: {
        command: { type: 'string', description: 'The command to run' },
        restart: { type: 'boolean', description: 'Restart the persistent shell before running' },
        timeout_ms: { type: 'integer', description: 'Per-call timeout in milliseconds' },
      },
    },
  },
  {
    name: 'read',
    description: 'Read a UTF-8 text file relative to the workdir.',
    input_schema: {
      type: 'object',
      properties: {
        file_path: { type: 'string' },
        view_range: {
          type: 'array',
          items: { type: 'integer' },
          description: '[start_line, end_line] 1-indexed inclusive',
        },
      },
      required: ['file_path'],
    },
  },
  {
    name: 'write',
    description: 'Write a UTF-8 text file relative to the workdir, creating parent directories as needed.',
    input_schema: {
      type: 'object',
      properties: { file_path: { type: 'string' }, content: { type: 'string' } },
      required: ['file_path', 'content'],
    },
  },
  {
    name: 'edit',
    description:
      'Replace old_string with new_string in a file. old_string must be unique unless replace_all.',
    input_schema: {
      type: 'object',
      properties: {
        file_path: { type: 'string' },
        old_string: { type: 'string' },
        new_string: { type: 'string' },
        replace_all: { type: 'boolean' },
      },
      required: ['file_path', 'old_string', 'new_string'],
    },
  },
  {
    name: 'glob',
    description:
      'Match files under the workdir against a glob pattern. Results are mtime-sorted, newest first.',
    input_schema: {
      type: 'object',
      properties: {
        pattern: { type: 'string' },
        path: { type: 'string', description: 'Directory to search in. Defaults to the workdir.' },
      },
      required: ['pattern'],
    },
  },
  {
    name: 'grep',
    description: 'Search file contents for a regex. Uses ripgrep if available, otherwise a built-in walker.',
    input_schema: {
      type: 'object',
      properties: { pattern: { type: 'string' }, path: { type: 'string' } },
      required: ['pattern'],
    },
  },
];

/** Toolset tools no runner here implements: never offered, always denied (see the module doc). */
export const UNRUNNABLE_TOOLSET_TOOLS: readonly string[] = ['web_fetch', 'web_search'];

/** The Messages tool definitions for an agent's tools: enabled built-ins, then custom tools, in order. */
export function toolDefinitions(agentTools: readonly AgentTool[]): ToolDefinition[] {
  const out: ToolDefinition[] = [];
  const seen = new Set<string>();
  const add = (definition: ToolDefinition) => {
    if (seen.has(definition.name)) return;
    seen.add(definition.name);
    // A copy: the caller may put it in a request, and a request must not alias our constants.
    out.push(structuredClone(definition));
  };
  for (const tool of agentTools) {
    if (tool.type === AGENT_TOOLSET_TYPE) {
      for (const definition of AGENT_TOOLSET_TOOLS) {
        if (toolConfig(tool, definition.name).enabled) add(definition);
      }
    } else if (tool.type === 'custom') {
      add({ name: tool.name, description: tool.description, input_schema: tool.input_schema });
    }
  }
  return out;
}

/** SDK BetaManagedAgentsAgentToolEvaluation: which policy decided, and under auto, its judgement. */
export type ToolEvaluation =
  | { type: 'always_allow' }
  | { type: 'always_ask' }
  | {
      type: 'auto';
      evaluated_permission:
        | { type: 'allow' }
        | { type: 'ask'; reason_code: string }
        | { type: 'deny'; reason_code: string };
    };

export interface PermissionEvaluation {
  evaluated_permission: 'allow' | 'ask' | 'deny';
  /** Absent when no policy applied: a custom tool, or a call refused because the tool is not offered. */
  evaluation?: ToolEvaluation;
}

/**
 * Leasehold has no risk classifier, so `auto` reaches no judgement; the SDK documents that such
 * a call "evaluates to ask" (reason code "indeterminate"), held for the client's confirmation.
 */
const AUTO_REASON_INDETERMINATE = 'indeterminate';

/**
 * The permission a call to `toolName` gets: a built-in tool's policy (always_allow → allow,
 * always_ask → ask, auto → ask, indeterminate); a custom tool → allow (its client runs it, and
 * its event carries no evaluation); any tool not offered to the model → deny, no evaluation.
 */
export function evaluatePermission(agentTools: readonly AgentTool[], toolName: string): PermissionEvaluation {
  for (const tool of agentTools) {
    if (tool.type === 'custom' && tool.name === toolName) return { evaluated_permission: 'allow' };
    if (tool.type === AGENT_TOOLSET_TYPE && AGENT_TOOLSET_TOOLS.some((d) => d.name === toolName)) {
      const config = toolConfig(tool, toolName);
      if (!config.enabled) continue;
      switch (config.permission_policy.type) {
        case 'always_allow':
          return { evaluated_permission: 'allow', evaluation: { type: 'always_allow' } };
        case 'always_ask':
          return { evaluated_permission: 'ask', evaluation: { type: 'always_ask' } };
        case 'auto':
          return {
            evaluated_permission: 'ask',
            evaluation: {
              type: 'auto',
              evaluated_permission: { type: 'ask', reason_code: AUTO_REASON_INDETERMINATE },
            },
          };
        default:
          // A policy newer than this code: refuse rather than guess what it allows.
          return { evaluated_permission: 'deny' };
      }
    }
  }
  return { evaluated_permission: 'deny' };
}

/** A toolset tool's own config, else the toolset's default. */
function toolConfig(
  toolset: AgentToolset,
  name: string,
): { enabled: boolean; permission_policy: PermissionPolicy } {
  return toolset.configs.find((c) => c.name === name) ?? toolset.default_config;
}
