#!/usr/bin/env node
/**
 * Builds the Cloudflare Workers the way a deploy would (`wrangler deploy --dry-run`, offline,
 * into a temporary directory) — the API Worker (wrangler.toml) and the brain Worker
 * (wrangler.brain.toml) — prints each one's raw and gzipped size, and fails when a gzipped size
 * passes that Worker's budget.
 *
 * Why gzip: Cloudflare's Worker size limits apply to the compressed upload, and it is what
 * a cold start has to fetch. The API Worker's budget is the edge goal itself; the brain's is
 * ~20 % over its size when set. Raise one only on purpose, with the new measurement, in
 * docs/deployment.md ("Bundle size"). Static assets (assets/) are uploaded beside the script
 * and count separately; their total is printed too.
 *
 * Usage: `npm run bundle` (CI runs it). Exit codes: 0 within budget, 1 over it, 2 build failed.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const WORKERS = [
  {
    name: 'API Worker',
    config: 'wrangler.toml',
    bundle: 'worker.js',
    /**
     * The edge goal: 200 KiB gzipped for everything the Worker serves (API, console pages, journal
     * routes). 195.5 KiB on 2026-12-01 once minified, with zod/mini, the OpenAPI document and the
     * console's files as static assets and no nkey signing. Not raised lightly: each KiB is parsed
     * by every cold isolate (bench: worker_cold_start).
     */
    budgetGzipKib: 200,
  },
  {
    name: 'brain Worker',
    config: 'wrangler.brain.toml',
    bundle: 'brain-worker.js',
    /** 138.6 KiB gzipped on 2026-12-01, minified (the durable turn, the journal, NATS, Neon), plus ~20 % headroom. */
    budgetGzipKib: 165,
  },
];

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const wrangler = path.join(root, 'node_modules', '.bin', 'wrangler');

/** Bytes under assets/ (static assets, served before the Worker runs), raw and gzipped file by file. */
function staticAssets() {
  let raw = 0;
  let gzip = 0;
  const dir = path.join(root, 'assets');
  for (const name of readdirSync(dir, { recursive: true })) {
    const file = path.join(dir, String(name));
    if (!statSync(file).isFile()) continue;
    const body = readFileSync(file);
    raw += body.length;
    gzip += gzipSync(body).length;
  }
  return { raw: raw / 1024, gzip: gzip / 1024 };
}

const assets = staticAssets();
process.stdout.write(
  `bundle: static assets (assets/, beside the API Worker) ${assets.raw.toFixed(1)} KiB, gzip ${assets.gzip.toFixed(1)} KiB\n`,
);

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
          'its budgetGzipKib in scripts/bundle-size.mjs and the figure in docs/deployment.md ("Bundle size") deliberately.\n',
      );
      process.exitCode = 1;
    }
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}
