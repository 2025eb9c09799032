import { describe, expect, it } from 'vitest';
import { CREDENTIAL_TTL_MS, CredentialCache } from '../../src/auth/credential-cache.js';
import type { Principal } from '../../src/auth/credentials.js';

const envKey = (keyId: string, environmentId = 'env_a'): Principal => ({
  kind: 'environment',
  environmentId,
  keyId,
});
const apiKey = (keyId: string): Principal => ({ kind: 'api', scope: 'admin', keyId });

function cacheAt(start = 1_000) {
  const clock = { now: start };
  return { clock, cache: new CredentialCache(CREDENTIAL_TTL_MS, () => clock.now) };
}

describe('CredentialCache', () => {
  it('remembers a resolved credential for the ttl and no longer', () => {
    const { clock, cache } = cacheAt();
    cache.set('d1', envKey('k1'), null);
    clock.now += CREDENTIAL_TTL_MS - 1;
    expect(cache.get('d1')).toEqual(envKey('k1'));
    clock.now += 1;
    expect(cache.get('d1')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('never remembers a key past its own expiry, and not at all once it has expired', () => {
    const { clock, cache } = cacheAt();
    cache.set('soon', apiKey('k1'), 500);
    cache.set('gone', apiKey('k2'), 0);
    cache.set('past', apiKey('k3'), -20);
    expect(cache.get('gone')).toBeUndefined();
    expect(cache.get('past')).toBeUndefined();
    clock.now += 499;
    expect(cache.get('soon')).toEqual(apiKey('k1'));
    clock.now += 1;
    expect(cache.get('soon')).toBeUndefined();
  });

  it('forgets a revoked key and a deleted environment at once, and nothing else', () => {
    const { cache } = cacheAt();
    cache.set('a', envKey('k1', 'env_a'), null);
    cache.set('b', envKey('k2', 'env_a'), null);
    cache.set('c', envKey('k3', 'env_b'), null);
    cache.set('d', apiKey('k4'), null);
    cache.forgetKey('k4');
    expect(cache.get('d')).toBeUndefined();
    cache.forgetEnvironment('env_a');
    expect(cache.get('a')).toBeUndefined();
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('c')).toEqual(envKey('k3', 'env_b'));
  });

  it('stays bounded: past its capacity the oldest entry goes first', () => {
    const { cache } = cacheAt();
    for (let i = 0; i < 10_001; i++) cache.set(`d${i}`, apiKey(`k${i}`), null);
    expect(cache.size).toBe(10_000);
    expect(cache.get('d0')).toBeUndefined();
    expect(cache.get('d10000')).toEqual(apiKey('k10000'));
  });
});
