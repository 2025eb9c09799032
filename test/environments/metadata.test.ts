import { describe, expect, it } from 'vitest';
import {
  applyMetadataPatch,
  MAX_METADATA_KEY,
  MAX_METADATA_PAIRS,
  MAX_METADATA_VALUE,
  metadataProblem,
} from '../../src/environments/index.js';

describe('environment metadata', () => {
  it('a patch sets strings, deletes on null and on "", and leaves omitted keys alone', () => {
    const current = { keep: '1', drop: '2', blank: '3', change: '4' };
    expect(applyMetadataPatch(current, { drop: null, blank: '', change: 'x', add: 'y' })).toEqual({
      keep: '1',
      change: 'x',
      add: 'y',
    });
    expect(current).toEqual({ keep: '1', drop: '2', blank: '3', change: '4' });
  });

  it('the caps are the documented ones: 16 pairs, 64-character keys, 512-character values', () => {
    expect([MAX_METADATA_PAIRS, MAX_METADATA_KEY, MAX_METADATA_VALUE]).toEqual([16, 64, 512]);
  });

  it('accepts a patch exactly at every cap', () => {
    const full = Object.fromEntries(
      Array.from({ length: MAX_METADATA_PAIRS }, (_, i) => [
        `${i}`.padEnd(MAX_METADATA_KEY, 'k'),
        'v'.repeat(MAX_METADATA_VALUE),
      ]),
    );
    expect(metadataProblem(full)).toBeNull();
    expect(metadataProblem({ gone: null })).toBeNull();
  });

  it.each([
    [
      'too many pairs',
      Object.fromEntries(Array.from({ length: MAX_METADATA_PAIRS + 1 }, (_, i) => [`k${i}`, 'v'])),
    ],
    ['an empty key', { '': 'v' }],
    ['a key one character too long', { ['k'.repeat(MAX_METADATA_KEY + 1)]: 'v' }],
    ['a value one character too long', { k: 'v'.repeat(MAX_METADATA_VALUE + 1) }],
  ])('names the problem with %s', (_, patch) => {
    expect(metadataProblem(patch)).toEqual(expect.any(String));
  });
});
