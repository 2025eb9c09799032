/**
 * The official SDK (the wire's judge) against the agents API, in process: its own request
 * building (the beta header, query serialisation), pagination and typed errors, with nothing
 * mocked but the network.
 */
import Anthropic from '@anthropic-ai/sdk';
import type { BetaManagedAgentsAgent } from '@anthropic-ai/sdk/resources/beta/agents/agents';
import { describe, expect, it } from 'vitest';
import { apiKey } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import { asAdmin, WIRE_STAMP } from '../helpers/management.js';

describe('the official SDK drives the agent endpoints', () => {
  const t = useTestDb('pg');
  const sdk = async (scope: 'admin' | 'platform' = 'admin') => {
    const { api } = await asAdmin(t.db);
    const key = await apiKey(t.db, scope);
    const seen: { url: string; beta: string | null }[] = [];
    const client = new Anthropic({
      apiKey: key,
      baseURL: 'http://leasehold.test',
      maxRetries: 0,
      fetch: (input, init) => {
        seen.push({ url: String(input), beta: new Headers(init?.headers).get('anthropic-beta') });
        return Promise.resolve(api.app.request(input as string, init));
      },
    });
    return { client, seen };
  };

  it('create, retrieve, update, archive and versions.list resolve to the documented shapes', async () => {
    const { client, seen } = await sdk();
    const agents = client.beta.agents;
    const created: BetaManagedAgentsAgent = await agents.create({
      name: 'coder',
      model: 'claude-opus-4-8',
      system: 'Write code.',
      tools: [
        {
          type: 'agent_toolset_20260401',
          configs: [{ name: 'bash', permission_policy: { type: 'always_ask' } }],
        },
        { type: 'custom', name: 'lookup', description: 'Looks up.', input_schema: { type: 'object' } },
      ],
      metadata: { team: 'infra' },
    });
    expect(created).toMatchObject({
      type: 'agent',
      version: 1,
      model: { id: 'claude-opus-4-8', speed: 'standard' },
      mcp_servers: [],
      skills: [],
      multiagent: null,
      execution_identity: { type: 'service_account' },
      archived_at: null,
    });
    expect(created.created_at).toMatch(WIRE_STAMP);
    const toolset = created.tools[0];
    if (toolset?.type !== 'agent_toolset_20260401') throw new Error('no toolset first');
    expect(toolset.configs.find((c) => c.name === 'bash')).toEqual({
      type: 'bash',
      name: 'bash',
      enabled: true,
      permission_policy: { type: 'always_ask' },
    });
    expect(await agents.retrieve(created.id)).toEqual(created);

    const updated = await agents.update(created.id, {
      version: 1,
      description: 'updated',
      metadata: { team: null },
    });
    expect(updated).toMatchObject({ version: 2, description: 'updated', metadata: {} });
    expect(await agents.retrieve(created.id, { version: 1 })).toEqual(created);

    const archived = await agents.archive(created.id);
    expect(archived).toMatchObject({ version: 2, archived_at: expect.stringMatching(WIRE_STAMP) });

    const versions: number[] = [];
    for await (const v of agents.versions.list(created.id)) versions.push(v.version);
    expect(versions).toEqual([2, 1]);
    // The SDK names its beta on every call; the server takes it, and takes its absence too.
    expect(seen.every((s) => s.beta?.includes('managed-agents-2026-04-01'))).toBe(true);
  });

  it('list pages with the auto-pager, visiting every agent once, archived ones only when asked', async () => {
    const { client, seen } = await sdk('platform');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await client.beta.agents.create({ name: `a${i}`, model: 'm' })).id);
    await client.beta.agents.archive(ids[0]!);
    const before = seen.length;
    const listed: string[] = [];
    for await (const agent of client.beta.agents.list({ limit: 2 })) listed.push(agent.id);
    expect(listed).toEqual(ids.slice(1).reverse());
    // Two full pages, no trailing empty one.
    expect(seen.length - before).toBe(2);
    const all: string[] = [];
    for await (const agent of client.beta.agents.list({ limit: 2, include_archived: true }))
      all.push(agent.id);
    expect(all).toEqual([...ids].reverse());
  });

  it('list filters by created_at as the SDK serialises the bracketed parameters', async () => {
    const { client } = await sdk();
    const a = await client.beta.agents.create({ name: 'a', model: 'm' });
    const page = await client.beta.agents.list({
      'created_at[gte]': a.created_at,
      'created_at[lte]': a.created_at,
    });
    expect(page.data.map((x) => x.id)).toEqual([a.id]);
    const later = await client.beta.agents.list({ 'created_at[gte]': '2999-01-01T00:00:00Z' });
    expect(later.data).toEqual([]);
  });

  it('an update from a stale version is a ConflictError', async () => {
    const { client } = await sdk();
    const a = await client.beta.agents.create({ name: 'a', model: 'm' });
    await client.beta.agents.update(a.id, { version: 1, name: 'b' });
    await expect(client.beta.agents.update(a.id, { version: 1, name: 'c' })).rejects.toBeInstanceOf(
      Anthropic.ConflictError,
    );
    expect((await client.beta.agents.retrieve(a.id)).name).toBe('b');
  });

  it.each([
    ['mcp_servers', { mcp_servers: [{ type: 'url' as const, name: 'gh', url: 'https://example.com/mcp' }] }],
    ['tools.0.type', { tools: [{ type: 'mcp_toolset' as const, mcp_server_name: 'gh' }] }],
    ['skills', { skills: [{ type: 'anthropic' as const, skill_id: 'xlsx' }] }],
    ['multiagent', { multiagent: { type: 'multiagent_20261001' as const } }],
    [
      'execution_identity',
      { execution_identity: { type: 'aws_role' as const, role_arn: 'arn:aws:iam::1:role/r' } },
    ],
  ])('a create with %s the server cannot honour is a BadRequestError naming it', async (field, extra) => {
    const { client } = await sdk();
    const refused = client.beta.agents.create({ name: 'x', model: 'm', ...extra });
    await expect(refused).rejects.toBeInstanceOf(Anthropic.BadRequestError);
    await expect(refused).rejects.toMatchObject({
      error: { error: { message: expect.stringContaining(field) } },
    });
    const updated = client.beta.agents
      .create({ name: 'y', model: 'm' })
      .then((a) => client.beta.agents.update(a.id, extra));
    await expect(updated).rejects.toMatchObject({
      status: 400,
      error: { error: { message: expect.stringContaining(field) } },
    });
  });

  it('an unknown agent is a NotFoundError on every call that names one', async () => {
    const { client } = await sdk();
    const id = 'agent_0000000000000000000000zz';
    const calls = [
      () => client.beta.agents.retrieve(id),
      () => client.beta.agents.update(id, { name: 'x' }),
      () => client.beta.agents.archive(id),
      () => client.beta.agents.versions.list(id),
    ];
    for (const call of calls) await expect(call()).rejects.toBeInstanceOf(Anthropic.NotFoundError);
  });
});
