import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { maybeRow } from '../../src/db/handle.js';
import { useTestDb } from '../helpers/db.js';
import { asAdmin, expectError } from '../helpers/management.js';

type Wire = Record<string, unknown> & { id: string; version: number; metadata: Record<string, string> };

describe('POST /v1/agents/{id}', () => {
  const t = useTestDb('pg');
  const setup = async () => {
    const admin = await asAdmin(t.db);
    const agent = await admin.ok<Wire>('POST', '/v1/agents', {
      name: 'before',
      model: { id: 'm', effort: 'high' },
      description: 'd',
      system: 's',
      tools: [{ type: 'agent_toolset_20260401' }],
      metadata: { a: '1', b: '2' },
    });
    const versions = async () =>
      (await maybeRow<{ n: number }>(
        t.db,
        sql`SELECT count(*)::int AS n FROM agent_versions WHERE agent_id = ${agent.id}`,
      ))!.n;
    return { ...admin, agent, path: `/v1/agents/${agent.id}`, versions };
  };

  it('writes the change as the next version, keeping what the patch omits', async () => {
    const { ok, agent, path } = await setup();
    const next = await ok<Wire>('POST', path, { name: 'after', metadata: { a: null, c: '3' }, model: 'm2' });
    expect(next).toEqual({
      ...agent,
      version: 2,
      name: 'after',
      // The model replaces whole, but an omitted effort keeps the stored one.
      model: { id: 'm2', speed: 'standard', effort: { type: 'high' } },
      metadata: { b: '2', c: '3' },
      updated_at: expect.any(String),
    });
    expect(next.updated_at).not.toBe(agent.updated_at);
    expect(await ok('GET', path)).toEqual(next);
    expect(await ok('GET', `${path}?version=1`)).toEqual(agent);
  });

  it('null or "" clears description and system, null or [] clears the tools', async () => {
    const { ok, path } = await setup();
    const next = await ok<Wire>('POST', path, { description: '', system: null, tools: [] });
    expect(next).toMatchObject({ description: null, system: null, tools: [], version: 2 });
    expect((await ok<Wire>('POST', path, { tools: null })).version).toBe(2);
  });

  it('an update that changes nothing (an empty body included) writes no version and answers the agent as it is', async () => {
    const { ok, call, agent, path, versions } = await setup();
    expect(await ok('POST', path, { name: 'before', metadata: { a: '1' }, version: 1 })).toEqual(agent);
    expect(await ok('POST', path, { tools: [{ type: 'agent_toolset_20260401' }], mcp_servers: [] })).toEqual(
      agent,
    );
    const empty = await call('POST', path);
    expect(empty.status).toBe(200);
    expect(await empty.json()).toEqual(agent);
    expect(await versions()).toBe(1);
  });

  it('a stale version is a 409 the SDK does not retry, and writes nothing', async () => {
    const { ok, call, path, versions } = await setup();
    await ok('POST', path, { name: 'two', version: 1 });
    const res = await call('POST', path, { name: 'three', version: 1 });
    expect(res.headers.get('x-should-retry')).toBe('false');
    const body = await expectError(res, 409, 'invalid_request_error');
    expect(body.error.message).toMatch(/version 2, not 1/);
    expect(await versions()).toBe(2);
  });

  it('an archived agent is read-only (400), a missing or malformed id is a 404', async () => {
    const { ok, call, path, versions } = await setup();
    await ok('POST', `${path}/archive`);
    const body = await expectError(await call('POST', path, { name: 'x' }), 400, 'invalid_request_error');
    expect(body.error.message).toMatch(/archived/);
    expect(await versions()).toBe(1);
    await expectError(
      await call('POST', '/v1/agents/agent_0000000000000000000000zz', {}),
      404,
      'not_found_error',
    );
    await expectError(await call('POST', '/v1/agents/not-an-id', {}), 404, 'not_found_error');
  });

  it.each([
    ['name: null (it cannot be cleared)', { name: null }, 'name'],
    ['model: null (it cannot be cleared)', { model: null }, 'model'],
    ['version 0', { version: 0 }, 'version'],
    ['MCP servers', { mcp_servers: [{ type: 'url', name: 'x', url: 'https://x' }] }, 'mcp_servers'],
    ['skills', { skills: [{ type: 'custom', skill_id: 'skill_1' }] }, 'skills'],
    ['multiagent', { multiagent: { type: 'multiagent_20261001' } }, 'multiagent'],
    [
      'an aws_role identity',
      { execution_identity: { type: 'aws_role', role_arn: 'arn' } },
      'execution_identity',
    ],
    ['an unknown field', { colour: 'blue' }, 'colour'],
    [
      'metadata past 16 keys once merged',
      { metadata: Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`k${i}`, 'v'])) },
      'metadata',
    ],
  ])('refuses %s with a 400 naming the field, writing nothing', async (_, body, field) => {
    const { call, path, versions } = await setup();
    const error = await expectError(await call('POST', path, body), 400, 'invalid_request_error');
    expect(error.error.message).toContain(field);
    expect(await versions()).toBe(1);
  });
});
