import { describe, expect, it } from 'vitest';
import { assertJson, canonicalJson } from '../../src/journal/json.js';

// Pure: the journal's JSON rules need no server.
describe('journal JSON rules', () => {
  it('canonical JSON sorts keys at every depth and drops whitespace, so equal values compare equal', () => {
    const spaced = JSON.parse('{ "b" : [1, {"z":1,"y":2}], "a" : null }');
    expect(canonicalJson(spaced)).toBe('{"a":null,"b":[1,{"y":2,"z":1}]}');
    expect(canonicalJson({ a: null, b: [1, { y: 2, z: 1 }] })).toBe(canonicalJson(spaced));
    expect(canonicalJson([2, 1])).not.toBe(canonicalJson([1, 2]));
    expect(canonicalJson(undefined)).toBe('');
    expect(canonicalJson(null)).toBe('null');
  });

  it('accepts plain JSON values and refuses what JSON.stringify would silently rewrite', () => {
    for (const ok of [null, true, 0, -1.5, 'x', [], [1, 'a'], { a: { b: [null] } }, { skipped: undefined }]) {
      expect(() => assertJson(ok, 'value')).not.toThrow();
    }
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const deep: { list: Record<string, unknown>[] } = { list: [{}] };
    deep.list[0]!.back = deep;
    for (const bad of [
      undefined,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      10n,
      () => 1,
      Symbol('s'),
      new Date(0),
      new Map(),
      [undefined],
      { nested: [Number.NaN] },
      cyclic,
      deep,
    ]) {
      expect(() => assertJson(bad, 'value')).toThrow(TypeError);
    }
    // A value shared twice is not a cycle.
    const shared = { n: 1 };
    expect(() => assertJson({ a: shared, b: shared }, 'value')).not.toThrow();
  });
});
