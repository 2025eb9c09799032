import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { BetaManagedAgentsAgent } from '@anthropic-ai/sdk/resources/beta/agents/agents';
import type { BetaManagedAgentsAgentToolUseEvent } from '@anthropic-ai/sdk/resources/beta/sessions/events';
import { betaAgentToolset20260401 } from '@anthropic-ai/sdk/tools/agent-toolset/node';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AGENT_TOOLSET_TOOLS,
  type AgentTool,
  type AgentToolset,
  evaluatePermission,
  type PermissionEvaluation,
  type PermissionPolicy,
  toolDefinitions,
  UNRUNNABLE_TOOLSET_TOOLS,
} from '../../src/turns/toolset.js';

const allow: PermissionPolicy = { type: 'always_allow' };
const ask: PermissionPolicy = { type: 'always_ask' };
const auto: PermissionPolicy = { type: 'auto' };

function toolset(
  enabled: boolean,
  policy: PermissionPolicy,
  configs: AgentToolset['configs'] = [],
): AgentToolset {
  return { type: 'agent_toolset_20260401', default_config: { enabled, permission_policy: policy }, configs };
}

const weather: AgentTool = {
  type: 'custom',
  name: 'get_weather',
  description: 'Weather for a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/** The agents API's resolved shape is what the brain will be handed: it must type as ours. */
function asAgentTools(tools: BetaManagedAgentsAgent['tools']): readonly AgentTool[] {
  return tools;
}

describe('the built-in toolset matches the runner the environment worker runs', () => {
  let workdir: string;
  beforeAll(async () => {
    workdir = await mkdtemp(path.join(tmpdir(), 'leasehold-toolset-'));
  });
  afterAll(async () => {
    await rm(workdir, { recursive: true, force: true });
  });

  it('offers exactly the runnable tools, with the names, descriptions and input schemas the runner declares', () => {
    const runnable = betaAgentToolset20260401({ workdir });
    const declared = runnable.map((t) =>
      'input_schema' in t ? { name: t.name, description: t.description, input_schema: t.input_schema } : t,
    );
    expect(AGENT_TOOLSET_TOOLS).toEqual(declared);
  });

  it('the tools it leaves out are ones the runner does not implement', () => {
    const names = betaAgentToolset20260401({ workdir }).map((t) => t.name);
    for (const name of UNRUNNABLE_TOOLSET_TOOLS) expect(names).not.toContain(name);
  });
});

describe('toolDefinitions', () => {
  it('an enabled toolset yields its six runnable tools, then custom tools, in order', () => {
    const defs = toolDefinitions([toolset(true, allow), weather]);
    expect(defs.map((d) => d.name)).toEqual(['bash', 'read', 'write', 'edit', 'glob', 'grep', 'get_weather']);
    expect(defs.at(-1)).toEqual({
      name: 'get_weather',
      description: 'Weather for a city',
      input_schema: weather.type === 'custom' ? weather.input_schema : {},
    });
  });

  it('leaves out tools disabled by config, and web_fetch / web_search even when enabled', () => {
    const defs = toolDefinitions([
      toolset(true, allow, [
        { name: 'bash', enabled: false, permission_policy: allow },
        { name: 'web_fetch', enabled: true, permission_policy: allow },
        { name: 'web_search', enabled: true, permission_policy: allow },
      ]),
    ]);
    expect(defs.map((d) => d.name)).toEqual(['read', 'write', 'edit', 'glob', 'grep']);
  });

  it('a disabled default with one tool enabled by its config yields just that tool', () => {
    const defs = toolDefinitions([
      toolset(false, allow, [{ name: 'grep', enabled: true, permission_policy: ask }]),
    ]);
    expect(defs.map((d) => d.name)).toEqual(['grep']);
  });

  it('takes an agent as the SDK types it: an agent with bash set to ask offers the other five and asks for bash', () => {
    const tools = asAgentTools([
      {
        type: 'agent_toolset_20260401',
        default_config: { enabled: true, permission_policy: { type: 'always_allow' } },
        configs: [
          { type: 'bash', name: 'bash', enabled: true, permission_policy: { type: 'always_ask' } },
          { type: 'grep', name: 'grep', enabled: false, permission_policy: { type: 'always_allow' } },
        ],
      },
    ]);
    expect(toolDefinitions(tools).map((d) => d.name)).toEqual(['bash', 'read', 'write', 'edit', 'glob']);
    expect(evaluatePermission(tools, 'bash').evaluated_permission).toBe('ask');
    expect(evaluatePermission(tools, 'grep').evaluated_permission).toBe('deny');
  });

  it('MCP toolsets offer nothing: Leasehold has no MCP client', () => {
    expect(toolDefinitions([{ type: 'mcp_toolset', mcp_server_name: 'github' }])).toEqual([]);
  });

  it('returns copies: mutating a definition does not change the next agent’s', () => {
    const [bash] = toolDefinitions([toolset(true, allow)]);
    (bash!.input_schema.properties as Record<string, unknown>).command = 'mangled';
    expect(toolDefinitions([toolset(true, allow)])[0]).toEqual(AGENT_TOOLSET_TOOLS[0]);
    expect(AGENT_TOOLSET_TOOLS[0]!.input_schema.properties).toHaveProperty('command.type', 'string');
  });
});

describe('evaluatePermission', () => {
  const cases: Array<[string, AgentTool[], string, PermissionEvaluation]> = [
    [
      'always_allow → allow',
      [toolset(true, allow)],
      'bash',
      { evaluated_permission: 'allow', evaluation: allow },
    ],
    ['always_ask → ask', [toolset(true, ask)], 'write', { evaluated_permission: 'ask', evaluation: ask }],
    [
      'auto → ask, indeterminate: no classifier reaches a judgement',
      [toolset(true, auto)],
      'edit',
      {
        evaluated_permission: 'ask',
        evaluation: { type: 'auto', evaluated_permission: { type: 'ask', reason_code: 'indeterminate' } },
      },
    ],
    [
      'a tool’s own policy overrides the default',
      [toolset(true, allow, [{ name: 'bash', enabled: true, permission_policy: ask }])],
      'bash',
      { evaluated_permission: 'ask', evaluation: ask },
    ],
    ['a custom tool → allow, no policy applies', [weather], 'get_weather', { evaluated_permission: 'allow' }],
    [
      'a tool disabled by its config → deny, no evaluation',
      [toolset(true, allow, [{ name: 'read', enabled: false, permission_policy: allow }])],
      'read',
      { evaluated_permission: 'deny' },
    ],
    ['a disabled toolset → deny', [toolset(false, allow)], 'glob', { evaluated_permission: 'deny' }],
    [
      'an enabled web_search → deny: not offered',
      [toolset(true, allow)],
      'web_search',
      { evaluated_permission: 'deny' },
    ],
    ['an unknown name → deny', [toolset(true, allow), weather], 'rm_rf', { evaluated_permission: 'deny' }],
  ];
  it.each(cases)('%s', (_, tools, name, expected) => {
    expect(evaluatePermission(tools, name)).toEqual(expected);
  });

  it('its result fits the agent.tool_use event’s fields in the SDK', () => {
    const { evaluated_permission, evaluation } = evaluatePermission([toolset(true, auto)], 'bash');
    const fields: Pick<BetaManagedAgentsAgentToolUseEvent, 'evaluated_permission' | 'evaluation'> = {
      evaluated_permission,
      evaluation,
    };
    expect(fields.evaluation?.type).toBe('auto');
  });

  it('property: a tool is denied exactly when it is not among the definitions offered to the model', () => {
    const policy = fc.constantFrom<PermissionPolicy>(allow, ask, auto);
    const names = ['bash', 'read', 'write', 'edit', 'glob', 'grep', 'web_fetch', 'web_search'];
    const config = fc.record({
      name: fc.constantFrom(...names),
      enabled: fc.boolean(),
      permission_policy: policy,
    });
    const custom = fc.record({
      type: fc.constant('custom' as const),
      name: fc.constantFrom('get_weather', 'bash', 'lookup'),
      description: fc.constant('a custom tool'),
      input_schema: fc.constant({ type: 'object' as const }),
    });
    const set = fc
      .tuple(fc.boolean(), policy, fc.array(config, { maxLength: 6 }))
      .map(([enabled, p, configs]) => toolset(enabled, p, configs));
    fc.assert(
      fc.property(fc.array(fc.oneof(set, custom), { maxLength: 4 }), (tools) => {
        const offered = new Set(toolDefinitions(tools).map((d) => d.name));
        for (const name of [...names, 'get_weather', 'lookup', 'nope']) {
          const { evaluated_permission, evaluation } = evaluatePermission(tools, name);
          expect(evaluated_permission === 'deny').toBe(!offered.has(name));
          if (evaluated_permission === 'deny') expect(evaluation).toBeUndefined();
        }
      }),
    );
  });
});
