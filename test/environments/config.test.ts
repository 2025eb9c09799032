import { describe, expect, it } from 'vitest';
import { type CloudConfig, DEFAULT_CONFIG, resolveConfig } from '../../src/environments/index.js';

const limited: CloudConfig = {
  type: 'cloud',
  networking: {
    type: 'limited',
    allow_mcp_servers: true,
    allow_package_managers: true,
    allowed_hosts: ['a.test'],
  },
  packages: { type: 'packages', apt: ['git'], cargo: [], gem: [], go: [], npm: ['tsx'], pip: [] },
};

describe('resolveConfig', () => {
  it('no config, or null, is cloud with unrestricted networking and empty package lists', () => {
    const expected = {
      type: 'cloud',
      networking: { type: 'unrestricted' },
      packages: { type: 'packages', apt: [], cargo: [], gem: [], go: [], npm: [], pip: [] },
    };
    expect(resolveConfig(undefined)).toEqual(expected);
    expect(resolveConfig(null)).toEqual(expected);
    expect(resolveConfig({ type: 'cloud', networking: null, packages: null })).toEqual(expected);
  });

  it('a self_hosted config carries nothing but its type', () => {
    expect(resolveConfig({ type: 'self_hosted' })).toEqual({ type: 'self_hosted' });
    expect(resolveConfig({ type: 'self_hosted' }, { type: 'self_hosted' })).toEqual({ type: 'self_hosted' });
  });

  it('limited networking on create fills what it leaves out with the documented defaults', () => {
    expect(
      resolveConfig({ type: 'cloud', networking: { type: 'limited', allowed_hosts: ['x.test'] } }),
    ).toEqual({
      ...DEFAULT_CONFIG,
      networking: {
        type: 'limited',
        allow_mcp_servers: false,
        allow_package_managers: false,
        allowed_hosts: ['x.test'],
      },
    });
  });

  it('on update, omitted and null fields keep the stored value at every level', () => {
    expect(resolveConfig({ type: 'cloud' }, limited)).toEqual(limited);
    expect(
      resolveConfig(
        {
          type: 'cloud',
          networking: { type: 'limited', allow_mcp_servers: false, allowed_hosts: null },
          packages: { pip: ['rich'], apt: null },
        },
        limited,
      ),
    ).toEqual({
      type: 'cloud',
      networking: {
        type: 'limited',
        allow_mcp_servers: false,
        allow_package_managers: true,
        allowed_hosts: ['a.test'],
      },
      packages: { ...limited.packages, pip: ['rich'] },
    });
  });

  it('switching networking type replaces it rather than mixing the two', () => {
    expect(resolveConfig({ type: 'cloud', networking: { type: 'unrestricted' } }, limited)).toEqual({
      ...limited,
      networking: { type: 'unrestricted' },
    });
    expect(resolveConfig({ type: 'cloud', networking: { type: 'limited' } }, DEFAULT_CONFIG)).toEqual({
      ...DEFAULT_CONFIG,
      networking: {
        type: 'limited',
        allow_mcp_servers: false,
        allow_package_managers: false,
        allowed_hosts: [],
      },
    });
  });

  it('never hands out the defaults themselves, so a caller cannot corrupt them', () => {
    const first = resolveConfig(undefined);
    if (first.type !== 'cloud') throw new Error('expected cloud');
    first.packages.npm.push('left-pad');
    first.networking = {
      type: 'limited',
      allow_mcp_servers: true,
      allow_package_managers: true,
      allowed_hosts: [],
    };
    expect(resolveConfig(undefined)).toEqual(DEFAULT_CONFIG);
    expect(DEFAULT_CONFIG.packages.npm).toEqual([]);
    expect(DEFAULT_CONFIG.networking).toEqual({ type: 'unrestricted' });
  });
});
