import { describe, expect, it } from 'vitest';
import { useTestDb } from '../helpers/db.js';
import { asAdmin, expectError, WIRE_STAMP } from '../helpers/management.js';

const NO_PACKAGES = { type: 'packages', apt: [], cargo: [], gem: [], go: [], npm: [], pip: [] };

describe('POST /v1/environments', () => {
  const t = useTestDb('pg');

  it('a bare name makes a cloud environment in exactly the BetaEnvironment shape', async () => {
    const { ok } = await asAdmin(t.db);
    const env = await ok('POST', '/v1/environments', { name: 'sandbox' });
    expect(env).toEqual({
      id: expect.stringMatching(/^env_[0-9a-z]{24}$/),
      type: 'environment',
      name: 'sandbox',
      description: null,
      metadata: {},
      config: { type: 'cloud', networking: { type: 'unrestricted' }, packages: NO_PACKAGES },
      archived_at: null,
      created_at: expect.stringMatching(WIRE_STAMP),
      updated_at: env.created_at,
      scope: 'organization',
    });
  });

  it('takes every documented field, trims the name and fills cloud gaps with defaults', async () => {
    const { ok } = await asAdmin(t.db);
    const env = await ok('POST', '/v1/environments', {
      name: '  builders  ',
      description: 'CI',
      metadata: { team: 'infra', empty: '' },
      scope: 'organization',
      config: {
        type: 'cloud',
        networking: { type: 'limited', allowed_hosts: ['pypi.org'] },
        packages: { pip: ['rich'] },
      },
    });
    expect(env).toMatchObject({
      name: 'builders',
      description: 'CI',
      // "" means "no such key" for environment metadata, on create as on update.
      metadata: { team: 'infra' },
      config: {
        type: 'cloud',
        networking: {
          type: 'limited',
          allow_mcp_servers: false,
          allow_package_managers: false,
          allowed_hosts: ['pypi.org'],
        },
        packages: { ...NO_PACKAGES, pip: ['rich'] },
      },
    });
  });

  it('a self_hosted config makes a self_hosted environment, whose config is its type alone', async () => {
    const { ok } = await asAdmin(t.db);
    const env = await ok('POST', '/v1/environments', { name: 'byoc', config: { type: 'self_hosted' } });
    expect(env.config).toEqual({ type: 'self_hosted' });
  });

  it('null config, description and scope mean their defaults', async () => {
    const { ok } = await asAdmin(t.db);
    const env = await ok('POST', '/v1/environments', {
      name: 'n',
      config: null,
      description: null,
      scope: null,
    });
    expect(env).toMatchObject({ description: null, config: { type: 'cloud' }, scope: 'organization' });
  });

  it.each([
    ['no body', undefined],
    ['not JSON', '{"name":'],
    ['an array', [{ name: 'x' }]],
    ['no name', {}],
    ['an empty name', { name: '' }],
    ['a blank name', { name: '   ' }],
    ['a name over 256 characters', { name: 'n'.repeat(257) }],
    ['an unknown field', { name: 'n', colour: 'blue' }],
    ['an unknown config field', { name: 'n', config: { type: 'self_hosted', image: 'x' } }],
    [
      'an unknown networking field',
      { name: 'n', config: { type: 'cloud', networking: { type: 'unrestricted', x: 1 } } },
    ],
    ['an unknown config type', { name: 'n', config: { type: 'lambda' } }],
    ['a non-string metadata value', { name: 'n', metadata: { a: 1 } }],
    ['a description over 2048 characters', { name: 'n', description: 'd'.repeat(2049) }],
    ["scope 'account'", { name: 'n', scope: 'account' }],
  ])('refuses %s with 400', async (_, body) => {
    const { call } = await asAdmin(t.db);
    await expectError(await call('POST', '/v1/environments', body), 400, 'invalid_request_error');
    const list = await (await call('GET', '/v1/environments')).json();
    expect(list.data).toEqual([]);
  });

  it.each([
    ['17 pairs', Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']))],
    ['a 65-character key', { ['k'.repeat(65)]: 'v' }],
    ['a 513-character value', { k: 'v'.repeat(513) }],
    ['an empty key', { '': 'v' }],
  ])('refuses metadata with %s as invalid_metadata', async (_, metadata) => {
    const { call } = await asAdmin(t.db);
    const body = await expectError(
      await call('POST', '/v1/environments', { name: 'n', metadata }),
      400,
      'invalid_request_error',
    );
    expect(body.error.details).toEqual({ error_code: 'invalid_metadata' });
  });

  it('accepts metadata exactly at the caps', async () => {
    const { ok } = await asAdmin(t.db);
    const metadata = Object.fromEntries(
      Array.from({ length: 16 }, (_, i) => [`${i}`.padEnd(64, 'k'), 'v'.repeat(512)]),
    );
    expect((await ok('POST', '/v1/environments', { name: 'n', metadata })).metadata).toEqual(metadata);
  });
});
