#!/usr/bin/env node
/**
 * Builds the Cloudflare Workers the way a deploy would (`wrangler deploy --dry-run`, offline,
 * into a temporary directory) — the API Worker (wrangler.toml) and the brain Worker
 * (wrangler.brain.toml) — prints each one's raw and gzipped size, and fails when a gzipped size
 * passes that Worker's budget.
 *
 * Why gzip: Cloudflare's Worker size limits apply to the compressed upload, and it is what
 * a cold start has to fetch. Each budget is ~20 % over the size measured when it was set, so
 * a dependency that doubles a bundle fails CI while ordinary growth does not; raise it on
 * purpose, with the new measurement, in README.md ("Bundle size").
 *
 * Usage: `npm run bundle` (CI runs it). Exit codes: 0 within budget, 1 over it, 2 build failed.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const WORKERS = [
  {
    name: 'API Worker',
    config: 'wrangler.toml',
    bundle: 'worker.js',
    /** 388 KiB gzipped when last raised (2026-11-30, the console and its bundled uPlot), plus ~20 % headroom. */
    budgetGzipKib: 470,
  },
  {
    name: 'brain Worker',
    config: 'wrangler.brain.toml',
    bundle: 'brain-worker.js',
    /** 205 KiB gzipped when set (2026-12-01: the durable turn, the journal, NATS, Neon), plus ~20 % headroom. */
    budgetGzipKib: 245,
  },
];

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const wrangler = path.join(root, 'node_modules', '.bin', 'wrangler');

for (const worker of WORKERS) {
  const outdir = mkdtempSync(path.join(tmpdir(), 'leasehold-bundle-'));
  try {
    const build = spawnSync(wrangler, ['deploy', '--dry-run', '--outdir', outdir, '-c', worker.config], {
      cwd: root,
      // Keep wrangler off the network: no metrics, no fetch of the `cf` object.
      env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false' },
      encoding: 'utf8',
    });
    if (build.error || build.status !== 0) {
      process.stderr.write(build.stdout ?? '');
      process.stderr.write(build.stderr ?? '');
      process.stderr.write(
        `bundle: wrangler deploy --dry-run -c ${worker.config} failed (${build.error?.message ?? `exit ${build.status}`})\n`,
      );
      process.exit(2);
    }
    const code = readFileSync(path.join(outdir, worker.bundle));
    const raw = code.length / 1024;
    const gzip = gzipSync(code).length / 1024;
    const share = Math.round((gzip / worker.budgetGzipKib) * 100);
    process.stdout.write(
      `bundle: ${worker.name} ${worker.bundle} ${raw.toFixed(1)} KiB, gzip ${gzip.toFixed(1)} KiB ` +
        `(budget ${worker.budgetGzipKib} KiB, ${share} % used)\n`,
    );
    if (gzip > worker.budgetGzipKib) {
      process.stderr.write(
        `bundle: the gzipped ${worker.name} bundle is ${gzip.toFixed(1)} KiB, over its budget of ${worker.budgetGzipKib} KiB. ` +
          'Find what grew (esbuild metafile, or the source map in the dry-run output), or raise ' +
          'its budgetGzipKib in scripts/bundle-size.mjs and the README line deliberately.\n',
      );
      process.exitCode = 1;
    }
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}
