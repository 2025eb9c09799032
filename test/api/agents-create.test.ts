import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { rows } from '../../src/db/handle.js';
import { useTestDb } from '../helpers/db.js';
import { asAdmin, expectError, WIRE_STAMP } from '../helpers/management.js';

const TOOLSET_TOOLS = ['bash', 'edit', 'read', 'write', 'glob', 'grep', 'web_fetch', 'web_search'];
const lookup = {
  type: 'custom',
  name: 'lookup',
  description: 'Looks a word up.',
  input_schema: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
};

describe('POST /v1/agents', () => {
  const t = useTestDb('pg');

  it('a name and a model id make version 1 in exactly the BetaManagedAgentsAgent shape', async () => {
    const { ok } = await asAdmin(t.db);
    const agent = await ok('POST', '/v1/agents', { name: 'coder', model: 'claude-opus-4-8' });
    expect(agent).toEqual({
      type: 'agent',
      id: expect.stringMatching(/^agent_[0-9a-z]{24}$/),
      version: 1,
      name: 'coder',
      description: null,
      model: { id: 'claude-opus-4-8', speed: 'standard' },
      system: null,
      tools: [],
      mcp_servers: [],
      skills: [],
      multiagent: null,
      execution_identity: { type: 'service_account' },
      metadata: {},
      archived_at: null,
      created_at: expect.stringMatching(WIRE_STAMP),
      updated_at: agent.created_at,
    });
  });

  it('takes every field it can run and answers them resolved', async () => {
    const { ok } = await asAdmin(t.db);
    const agent = await ok('POST', '/v1/agents', {
      name: '  coder  ',
      model: { id: 'claude-opus-4-8', effort: 'xhigh', speed: 'fast', inference_geo: 'us' },
      description: 'Writes code',
      system: 'You write code.',
      tools: [
        {
          type: 'agent_toolset_20260401',
          default_config: { permission_policy: { type: 'always_ask' } },
          configs: [
            { name: 'bash', enabled: false },
            { name: 'web_fetch', enabled: false },
          ],
        },
        lookup,
      ],
      metadata: { team: 'infra', empty: '' },
      mcp_servers: [],
      skills: [],
      multiagent: null,
      execution_identity: { type: 'service_account' },
    });
    expect(agent).toMatchObject({
      name: 'coder',
      model: { id: 'claude-opus-4-8', effort: { type: 'xhigh' }, speed: 'fast', inference_geo: 'us' },
      description: 'Writes code',
      system: 'You write code.',
      metadata: { team: 'infra', empty: '' },
    });
    expect(agent.tools).toEqual([
      {
        type: 'agent_toolset_20260401',
        default_config: { enabled: true, permission_policy: { type: 'always_ask' } },
        configs: TOOLSET_TOOLS.map((name) => ({
          type: name,
          name,
          enabled: !['bash', 'web_fetch', 'web_search'].includes(name),
          permission_policy: { type: 'always_ask' },
        })),
      },
      lookup,
    ]);
  });

  it('null and empty optional fields mean their defaults', async () => {
    const { ok } = await asAdmin(t.db);
    const agent = await ok('POST', '/v1/agents', {
      name: 'n',
      model: { id: 'm', effort: null, speed: null, inference_geo: null },
      description: '',
      system: null,
      tools: null,
      mcp_servers: null,
      skills: null,
      execution_identity: null,
    });
    expect(agent).toMatchObject({
      description: null,
      system: null,
      tools: [],
      model: { id: 'm', speed: 'standard' },
    });
  });

  it.each([
    [
      'MCP servers',
      { mcp_servers: [{ type: 'url', name: 'gh', url: 'https://example.com/mcp' }] },
      'mcp_servers',
    ],
    ['an mcp_toolset', { tools: [{ type: 'mcp_toolset', mcp_server_name: 'gh' }] }, 'tools.0.type'],
    ['skills', { skills: [{ type: 'anthropic', skill_id: 'xlsx' }] }, 'skills'],
    ['multiagent', { multiagent: { type: 'coordinator', agents: [{ type: 'self' }] } }, 'multiagent'],
    [
      'an aws_role execution identity',
      { execution_identity: { type: 'aws_role', role_arn: 'arn:aws:iam::1:role/r' } },
      'execution_identity.type',
    ],
    [
      'an unknown toolset tool',
      { tools: [{ type: 'agent_toolset_20260401', configs: [{ name: 'teleport' }] }] },
      'tools.0.configs.0.name',
    ],
    [
      'a tool configured twice',
      { tools: [{ type: 'agent_toolset_20260401', configs: [{ name: 'bash' }, { name: 'bash' }] }] },
      'tools.0.configs.1.name',
    ],
    ['two custom tools of one name', { tools: [lookup, lookup] }, 'tools.1.name'],
    [
      'a custom tool named like a toolset tool',
      { tools: [{ type: 'agent_toolset_20260401' }, { ...lookup, name: 'bash' }] },
      'tools.1.name',
    ],
    [
      'web_search enabled (no worker runs it)',
      { tools: [{ type: 'agent_toolset_20260401', configs: [{ name: 'web_search', enabled: true }] }] },
      'tools.0.configs.0.enabled',
    ],
    [
      'a domain filter on web_fetch',
      {
        tools: [
          { type: 'agent_toolset_20260401', configs: [{ name: 'web_fetch', allowed_domains: ['a.com'] }] },
        ],
      },
      'tools.0.configs.0.allowed_domains',
    ],
    [
      'more than 256 tools',
      { tools: Array.from({ length: 257 }, (_, i) => ({ ...lookup, name: `t${i}` })) },
      'tools',
    ],
    [
      'too many metadata pairs',
      { metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) },
      'metadata',
    ],
    ['a metadata key too long', { metadata: { ['k'.repeat(65)]: 'v' } }, 'metadata'],
    ['a metadata value too long', { metadata: { k: 'v'.repeat(513) } }, 'metadata'],
  ])('refuses %s with a 400 naming the field, writing nothing', async (_, extra, field) => {
    const { call } = await asAdmin(t.db);
    const res = await call('POST', '/v1/agents', { name: 'n', model: 'm', ...extra });
    const body = await expectError(res, 400, 'invalid_request_error');
    expect(body.error.message).toContain(field);
    expect(await rows(t.db, sql`SELECT 1 FROM agents`)).toEqual([]);
  });

  it.each([
    ['no body', undefined],
    ['not JSON', '{"name":'],
    ['no name', { model: 'm' }],
    ['an empty name', { name: ' ', model: 'm' }],
    ['no model', { name: 'n' }],
    ['an empty model id', { name: 'n', model: '' }],
    ['an unknown effort', { name: 'n', model: { id: 'm', effort: 'extreme' } }],
    ['an unknown field', { name: 'n', model: 'm', colour: 'blue' }],
    [
      'a custom tool without input_schema',
      { name: 'n', model: 'm', tools: [{ ...lookup, input_schema: undefined }] },
    ],
    ['a custom tool name with a space', { name: 'n', model: 'm', tools: [{ ...lookup, name: 'look up' }] }],
  ])('%s is a 400', async (_, body) => {
    const { call } = await asAdmin(t.db);
    await expectError(await call('POST', '/v1/agents', body), 400, 'invalid_request_error');
  });

  it('a platform API key may create agents too; an environment key may not', async () => {
    const { api } = await asAdmin(t.db);
    const { apiKey, environmentWithKey } = await import('../helpers/api.js');
    const platform = await apiKey(t.db, 'platform');
    const res = await api.call('POST', '/v1/agents', { key: platform, body: { name: 'p', model: 'm' } });
    expect(res.status).toBe(200);
    const { key } = await environmentWithKey(t.db);
    await expectError(
      await api.call('POST', '/v1/agents', { key, body: { name: 'e', model: 'm' } }),
      401,
      'authentication_error',
    );
  });
});
