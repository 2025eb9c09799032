import { describe, expect, it } from 'vitest';
import { expectPositionals, integer, parseArgs } from '../../src/cli/args.js';
import { UsageError } from '../../src/cli/errors.js';

const specs = {
  json: { type: 'boolean' },
  key: { type: 'string' },
  meta: { type: 'string', multiple: true },
  help: { type: 'boolean', short: 'h' },
} as const;

describe('parseArgs', () => {
  it('reads --name value, --name=value, flags, short flags, repeats and positionals in any order', () => {
    const { values, positionals } = parseArgs(
      ['a', '--key', 'k1', '--json', 'b', '--meta=x=1', '--meta', 'y=2', '-h'],
      specs,
    );
    expect(values).toEqual({ key: 'k1', json: true, meta: ['x=1', 'y=2'], help: true });
    expect(positionals).toEqual(['a', 'b']);
  });

  it('treats everything after -- as positionals, even what looks like an option', () => {
    expect(parseArgs(['--', '--json', '-x'], specs).positionals).toEqual(['--json', '-x']);
  });

  it('refuses an unknown option, a missing value and a value on a flag', () => {
    expect(() => parseArgs(['--nope'], specs)).toThrow(new UsageError('unknown option --nope'));
    expect(() => parseArgs(['--key'], specs)).toThrow(new UsageError('--key needs a value'));
    expect(() => parseArgs(['--json=1'], specs)).toThrow(new UsageError('--json takes no value'));
  });

  it('integer() keeps its bounds and expectPositionals names what is missing or extra', () => {
    expect(integer({ n: '5' }, 'n', 1, 1, 10)).toBe(5);
    expect(integer({}, 'n', 7, 1, 10)).toBe(7);
    expect(() => integer({ n: '11' }, 'n', 1, 1, 10)).toThrow(UsageError);
    expect(() => integer({ n: '-1' }, 'n', 1, 1, 10)).toThrow(UsageError);
    expect(() => expectPositionals(['a'], ['env', 'id'])).toThrow(new UsageError('missing <id>'));
    expect(() => expectPositionals(['a', 'b'], ['env'])).toThrow(new UsageError('unexpected argument "b"'));
  });
});
