import { describe, expect, it } from 'vitest';
import {
  AgentDefinitionError,
  MAX_TOOLS,
  patchDefinition,
  resolveDefinition,
  resolveModel,
  resolveTools,
  TOOLSET_TOOLS,
  UNRUNNABLE_TOOLSET_TOOLS,
} from '../../src/agents/index.js';
import { MAX_METADATA_PAIRS as MAX_METADATA_PAIRS_AGENT } from '../../src/environments/index.js';
import * as brain from '../../src/turns/toolset.js';

const custom = (name: string) => ({
  type: 'custom' as const,
  name,
  description: `${name} things`,
  input_schema: { type: 'object' as const, properties: { q: { type: 'string' } }, required: ['q'] },
});
const toolset = { type: 'agent_toolset_20260401' as const };

/** The field an `AgentDefinitionError` names, or what else was thrown. */
function refusedField(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof AgentDefinitionError) return err.field;
    throw err;
  }
  throw new Error('not refused');
}

describe('resolveDefinition', () => {
  it('fills every default: model config, no tools, the capabilities Leasehold lacks at their empty values', () => {
    expect(resolveDefinition({ name: 'a', model: 'claude-opus-4-8' })).toEqual({
      name: 'a',
      description: null,
      model: { id: 'claude-opus-4-8', speed: 'standard' },
      system: null,
      tools: [],
      mcp_servers: [],
      skills: [],
      multiagent: null,
      execution_identity: { type: 'service_account' },
      metadata: {},
    });
  });

  it('"" and null description and system both mean none', () => {
    const d = resolveDefinition({ name: 'a', model: 'm', description: '', system: null });
    expect([d.description, d.system]).toEqual([null, null]);
  });

  it('a bare toolset resolves to one enabled, always_allow config per runnable tool, web tools disabled', () => {
    const [set] = resolveTools([toolset]);
    expect(set).toEqual({
      type: 'agent_toolset_20260401',
      default_config: { enabled: true, permission_policy: { type: 'always_allow' } },
      configs: TOOLSET_TOOLS.map((name) => ({
        type: name,
        name,
        enabled: !UNRUNNABLE_TOOLSET_TOOLS.includes(name),
        permission_policy: { type: 'always_allow' },
      })),
    });
  });

  it('a tool config overrides the default_config, which overrides the toolset defaults', () => {
    const [set] = resolveTools([
      {
        ...toolset,
        default_config: { enabled: false, permission_policy: { type: 'always_ask' } },
        configs: [
          { name: 'bash', enabled: true },
          { name: 'read', type: 'read', permission_policy: { type: 'auto' } },
          { name: 'web_search', enabled: false, permission_policy: null },
        ],
      },
    ]);
    if (set?.type !== 'agent_toolset_20260401') throw new Error('not a toolset');
    const byName = Object.fromEntries(
      set.configs.map((c) => [c.name, [c.enabled, c.permission_policy.type]]),
    );
    expect(byName).toEqual({
      bash: [true, 'always_ask'],
      edit: [false, 'always_ask'],
      read: [false, 'auto'],
      write: [false, 'always_ask'],
      glob: [false, 'always_ask'],
      grep: [false, 'always_ask'],
      web_fetch: [false, 'always_ask'],
      web_search: [false, 'always_ask'],
    });
  });

  it('keeps a custom tool as sent, and never shares its schema object with the request', () => {
    const sent = custom('lookup');
    const [tool] = resolveTools([sent]);
    expect(tool).toEqual(sent);
    expect(tool).not.toBe(sent);
    if (tool?.type !== 'custom') throw new Error('not custom');
    expect(tool.input_schema).not.toBe(sent.input_schema);
  });

  it.each([
    [
      'a tool configured twice',
      [{ ...toolset, configs: [{ name: 'bash' }, { name: 'bash' }] }],
      'tools.0.configs.1.name',
    ],
    [
      'a config whose type is not its name',
      [{ ...toolset, configs: [{ name: 'bash', type: 'read' }] }],
      'tools.0.configs.0.type',
    ],
    [
      'web_fetch enabled',
      [{ ...toolset, configs: [{ name: 'web_fetch', enabled: true }] }],
      'tools.0.configs.0.enabled',
    ],
    ['two toolsets', [toolset, toolset], 'tools.1'],
    ['two custom tools of one name', [custom('a'), custom('b'), custom('a')], 'tools.2.name'],
    ['a custom tool named like a toolset tool', [toolset, custom('grep')], 'tools.1.name'],
    ['a toolset whose tool a custom tool already named', [custom('bash'), toolset], 'tools.1'],
  ] as const)('refuses %s, naming the field', (_, tools, field) => {
    expect(refusedField(() => resolveTools(tools as never))).toBe(field);
  });

  it(`counts a toolset as its ${TOOLSET_TOOLS.length} tools against the cap of ${MAX_TOOLS}`, () => {
    const customs = (n: number) => Array.from({ length: n }, (_, i) => custom(`t${i}`));
    expect(resolveTools([toolset, ...customs(MAX_TOOLS - TOOLSET_TOOLS.length)])).toHaveLength(
      MAX_TOOLS - TOOLSET_TOOLS.length + 1,
    );
    expect(
      refusedField(() => resolveTools([toolset, ...customs(MAX_TOOLS - TOOLSET_TOOLS.length + 1)])),
    ).toBe('tools');
  });

  it('refuses metadata past the caps, naming metadata', () => {
    const pairs = Object.fromEntries(
      Array.from({ length: MAX_METADATA_PAIRS_AGENT + 1 }, (_, i) => [`k${i}`, 'v']),
    );
    expect(refusedField(() => resolveDefinition({ name: 'a', model: 'm', metadata: pairs }))).toBe(
      'metadata',
    );
    expect(
      refusedField(() => resolveDefinition({ name: 'a', model: 'm', metadata: { ['k'.repeat(65)]: 'v' } })),
    ).toBe('metadata');
  });
});

describe('resolveModel', () => {
  it('a model id is a config at standard speed; effort and inference_geo appear only when chosen', () => {
    expect(resolveModel('m')).toEqual({ id: 'm', speed: 'standard' });
    expect(resolveModel({ id: 'm', effort: 'low', inference_geo: 'us', speed: 'fast' })).toEqual({
      id: 'm',
      speed: 'fast',
      effort: { type: 'low' },
      inference_geo: 'us',
    });
    expect(resolveModel({ id: 'm', effort: { type: 'max' } }).effort).toEqual({ type: 'max' });
  });

  it('on update the model replaces whole, except that an omitted effort keeps the stored one', () => {
    const base = resolveModel({ id: 'old', effort: 'high', inference_geo: 'eu', speed: 'fast' });
    expect(resolveModel({ id: 'new' }, base)).toEqual({
      id: 'new',
      speed: 'standard',
      effort: { type: 'high' },
    });
    expect(resolveModel({ id: 'new', effort: null }, base)).toEqual({ id: 'new', speed: 'standard' });
    expect(resolveModel('new', base).effort).toEqual({ type: 'high' });
  });
});

describe('patchDefinition', () => {
  const base = resolveDefinition({
    name: 'a',
    model: 'm',
    description: 'd',
    system: 's',
    tools: [toolset],
    metadata: { keep: '1', drop: '2' },
  });

  it('keeps what the patch omits, merges metadata (null deletes, "" is a value) and replaces tools whole', () => {
    const next = patchDefinition(base, { metadata: { drop: null, empty: '' }, tools: [custom('x')] });
    expect(next).toEqual({ ...base, metadata: { keep: '1', empty: '' }, tools: [custom('x')] });
  });

  it('null and "" clear description and system; null tools clear the tools', () => {
    const next = patchDefinition(base, { description: '', system: null, tools: null });
    expect([next.description, next.system, next.tools]).toEqual([null, null, []]);
  });

  it('refuses metadata that would pass the pair cap only once merged', () => {
    const full = patchDefinition(base, {
      metadata: Object.fromEntries(
        Array.from({ length: MAX_METADATA_PAIRS_AGENT - 2 }, (_, i) => [`k${i}`, 'v']),
      ),
    });
    expect(Object.keys(full.metadata)).toHaveLength(MAX_METADATA_PAIRS_AGENT);
    expect(refusedField(() => patchDefinition(full, { metadata: { one: 'more' } }))).toBe('metadata');
    expect(
      Object.keys(patchDefinition(full, { metadata: { one: 'more', keep: null } }).metadata),
    ).toHaveLength(MAX_METADATA_PAIRS_AGENT);
  });
});

describe('what an agent shows is what a session offers the model', () => {
  it('the tools a resolved toolset shows enabled are exactly the ones the brain offers', () => {
    const tools = resolveTools([toolset, custom('lookup')]);
    const shown = tools.flatMap((t) =>
      t.type === 'custom' ? [t.name] : t.configs.filter((c) => c.enabled).map((c) => c.name),
    );
    // As sets: the brain lists built-ins in its runner's order, the wire in the SDK's.
    expect(
      brain
        .toolDefinitions(tools)
        .map((d) => d.name)
        .sort(),
    ).toEqual(shown.sort());
  });

  it('the toolset tools refused as unrunnable are the ones the brain cannot run', () => {
    expect([...UNRUNNABLE_TOOLSET_TOOLS].sort()).toEqual([...brain.UNRUNNABLE_TOOLSET_TOOLS].sort());
    const runnable = TOOLSET_TOOLS.filter((n) => !UNRUNNABLE_TOOLSET_TOOLS.includes(n));
    expect(brain.AGENT_TOOLSET_TOOLS.map((d) => d.name).sort()).toEqual([...runnable].sort());
  });
});

describe('metadata keys that name Object.prototype members', () => {
  it('are stored as plain keys, on create and on update', () => {
    const created = resolveDefinition({
      name: 'a',
      model: 'm',
      metadata: JSON.parse('{"__proto__":"p","constructor":"c"}'),
    });
    expect(Object.keys(created.metadata).sort()).toEqual(['__proto__', 'constructor']);
    const patched = patchDefinition(created, { metadata: JSON.parse('{"__proto__":null,"toString":"t"}') });
    expect(JSON.parse(JSON.stringify(patched.metadata))).toEqual({ constructor: 'c', toString: 't' });
  });
});
