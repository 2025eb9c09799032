/**
 * scripts/launch.mjs, the way `npm start`, `npm run brain` and the `leasehold` command run
 * their entry: a bundle in .build/, built once, reused while nothing under src/ or functions/
 * changed, rebuilt at the first start after a change. Measured on the real `leasehold`
 * binary (its smallest entry); only a file's modification time is touched, never its content,
 * so other files' servers starting meanwhile at most rebuild the same bundle.
 */
import { execFile } from 'node:child_process';
import { stat, utimes } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/server.js';

const BIN = path.join(ROOT, 'bin/leasehold.mjs');
const BUNDLE = path.join(ROOT, '.build/cli.mjs');
/** A source the command's bundle is built from. */
const SOURCE = path.join(ROOT, 'src/ids.ts');

function help(): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [BIN, '--help'], { timeout: 30_000 }, (err, stdout) =>
      err ? reject(err) : resolve(stdout),
    );
  });
}

const builtAt = async () => (await stat(BUNDLE)).mtimeMs;

describe('launch', () => {
  it('reuses the bundle while no source changed and rebuilds it at the first start after a change', async () => {
    expect(await help()).toContain('leasehold');
    const first = await builtAt();

    expect(await help()).toContain('leasehold');
    expect(await builtAt()).toBe(first);

    // A source newer than the bundle, as an edit leaves it (content unchanged).
    const source = await stat(SOURCE);
    const edited = new Date(first + 1_000);
    await utimes(SOURCE, source.atime, edited);
    try {
      expect(await help()).toContain('leasehold');
      expect(await builtAt()).toBeGreaterThan(first);
    } finally {
      // Back to its own time when that was later (a checkout newer than the bundle).
      if (source.mtimeMs > edited.getTime()) await utimes(SOURCE, source.atime, source.mtime);
    }
  });
});
