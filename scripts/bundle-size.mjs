#!/usr/bin/env node
/**
 * Builds the Cloudflare Worker bundle the way a deploy would (`wrangler deploy --dry-run`,
 * offline, into a temporary directory), prints its raw and gzipped size, and fails when the
 * gzipped size passes the budget.
 *
 * Why gzip: Cloudflare's Worker size limits apply to the compressed upload, and it is what
 * a cold start has to fetch. The budget is ~20 % over the size measured when it was set, so
 * a dependency that doubles the bundle fails CI while ordinary growth does not; raise it on
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

/** 388 KiB gzipped when last raised (2026-11-30, the console and its bundled uPlot), plus ~20 % headroom. */
const BUDGET_GZIP_KIB = 470;

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const wrangler = path.join(root, 'node_modules', '.bin', 'wrangler');
const outdir = mkdtempSync(path.join(tmpdir(), 'leasehold-bundle-'));

try {
  const build = spawnSync(wrangler, ['deploy', '--dry-run', '--outdir', outdir], {
    cwd: root,
    // Keep wrangler off the network: no metrics, no fetch of the `cf` object.
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false' },
    encoding: 'utf8',
  });
  if (build.error || build.status !== 0) {
    process.stderr.write(build.stdout ?? '');
    process.stderr.write(build.stderr ?? '');
    process.stderr.write(
      `bundle: wrangler deploy --dry-run failed (${build.error?.message ?? `exit ${build.status}`})\n`,
    );
    process.exit(2);
  }
  const code = readFileSync(path.join(outdir, 'worker.js'));
  const raw = code.length / 1024;
  const gzip = gzipSync(code).length / 1024;
  const share = Math.round((gzip / BUDGET_GZIP_KIB) * 100);
  process.stdout.write(
    `bundle: worker.js ${raw.toFixed(1)} KiB, gzip ${gzip.toFixed(1)} KiB ` +
      `(budget ${BUDGET_GZIP_KIB} KiB, ${share} % used)\n`,
  );
  if (gzip > BUDGET_GZIP_KIB) {
    process.stderr.write(
      `bundle: the gzipped Worker bundle is ${gzip.toFixed(1)} KiB, over its budget of ${BUDGET_GZIP_KIB} KiB. ` +
        'Find what grew (esbuild metafile, or the source map in the dry-run output), or raise ' +
        'BUDGET_GZIP_KIB in scripts/bundle-size.mjs and the README line deliberately.\n',
    );
    process.exitCode = 1;
  }
} finally {
  rmSync(outdir, { recursive: true, force: true });
}
