import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { failureList, firstLine } from './failure-list.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');

describe('failure list', () => {
  it('prints nothing when nothing failed', () => {
    expect(failureList([], [])).toEqual([]);
  });

  it('names each failed test with its file, a failed file alone, then unhandled errors', () => {
    expect(
      failureList(
        [
          { file: 'test/a.test.ts', test: 'a > adds', message: 'expected 3 to be 4' },
          { file: 'test/b.test.ts', test: null, message: 'hook timed out' },
        ],
        ['boom'],
      ),
    ).toEqual([
      'Failed (3):',
      '  test/a.test.ts > a > adds: expected 3 to be 4',
      '  test/b.test.ts: hook timed out',
      '  unhandled error: boom',
    ]);
  });

  it('keeps the first line of a message, cut to 200 characters', () => {
    expect(firstLine({ message: 'first\nsecond' })).toBe('first');
    expect(firstLine({ name: 'AssertionError' })).toBe('AssertionError');
    expect(firstLine(undefined)).toBe('no message');
    expect(firstLine({ message: 'x'.repeat(500) })).toHaveLength(200);
  });

  it('is the last thing a failing run prints, naming the failed test and the failed file', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'failure-list-'));
    try {
      writeFileSync(
        path.join(dir, 'vitest.config.mjs'),
        `export default { test: { globals: true, include: ['*.test.mjs'], reporters: ['default', ${JSON.stringify(
          path.join(here, 'failure-list.ts'),
        )}] } };\n`,
      );
      writeFileSync(
        path.join(dir, 'sums.test.mjs'),
        "describe('sums', () => {\n  it('passes', () => expect(1 + 1).toBe(2));\n  it('adds', () => expect(1 + 2).toBe(4));\n});\n",
      );
      writeFileSync(
        path.join(dir, 'setup.test.mjs'),
        "beforeAll(() => { throw new Error('no database\\nsecond line'); });\nit('never runs', () => {});\n",
      );
      const run = spawnSync(
        process.execPath,
        [
          path.join(root, 'node_modules/vitest/vitest.mjs'),
          'run',
          '--root',
          dir,
          '--config',
          'vitest.config.mjs',
        ],
        { cwd: dir, encoding: 'utf8', env: { ...process.env, CI: 'true', NO_COLOR: '1' }, timeout: 60_000 },
      );
      expect(run.status, run.stderr).toBe(1);
      const tail = run.stdout.trimEnd().split('\n').slice(-3);
      expect(tail[0]).toBe('Failed (2):');
      expect(tail.slice(1).sort()).toEqual([
        '  setup.test.mjs: no database',
        '  sums.test.mjs > sums > adds: expected 3 to be 4 // Object.is equality',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
