#!/usr/bin/env node
// Runs a TypeScript entry of functions/ (`npm start`, `npm run brain`, the `leasehold`
// command) as JavaScript: esbuild bundles the entry and everything it imports from src/ into
// .build/<entry>.mjs, packages left as imports, and this process imports the bundle.
//
// Why not tsx, as the other scripts: under tsx every module a start loads (about 900 for the
// server, 650 of them packages) is resolved and read through its loader thread. On an idle
// two-core machine a server start cost ≈ 2.7 s of CPU that way and ≈ 1.0 s from the bundle
// (answering after ≈ 1.1 s instead of ≈ 2.5 s); a `leasehold` command ≈ 0.6 s and ≈ 0.17 s.
// Building after a change is esbuild's Go process for a fraction of a second.
//
// The bundle is rebuilt when any file under src/ or functions/ (or this script) is newer
// than it, so an edit takes effect at the next start as under tsx. Starts that race on a
// stale bundle each build it and rename theirs into place, the entry last: a start never
// imports a half-written file. What an entry imports lazily (the embedded database, the
// telemetry SDK) is a chunk beside it, named by its content; .build/ can be deleted whenever
// no process is starting. It sits one level below the root, as functions/ does, so the
// entries' paths relative to their own module (../drizzle, ../assets) resolve the same.
import { mkdirSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BUILD = path.join(ROOT, '.build');

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [entryArg, ...rest] = process.argv.slice(2);
  if (!entryArg) {
    console.error('usage: node scripts/launch.mjs functions/<entry>.ts [args…]');
    process.exit(2);
  }
  await runEntry(path.resolve(entryArg), rest);
}

/**
 * Runs `entry` (a TypeScript file under functions/) in this process with `args` after it, as
 * above; `quiet` leaves out the one line a read-only install's fallback prints (the
 * `leasehold` command, whose output is its own).
 */
export async function runEntry(entry, args, { quiet = false } = {}) {
  const bundle = path.join(BUILD, `${path.basename(entry, '.ts')}.mjs`);
  // The entry sees itself as the script, as it would under tsx.
  process.argv = [process.argv[0], entry, ...args];
  if (fresh(bundle) || (await built(entry, bundle, quiet))) {
    // Stack traces name the TypeScript sources (the bundle's linked source map).
    process.setSourceMapsEnabled(true);
    await import(pathToFileURL(bundle).href);
  } else {
    // A read-only install: the entry as it is, through tsx, at tsx's start-up cost.
    const { register } = await import('tsx/esm/api');
    register();
    await import(pathToFileURL(entry).href);
  }
}

/** Builds the bundle; false when .build/ cannot be written here (a read-only install). */
async function built(from, to, quiet) {
  try {
    await build(from, to);
    return true;
  } catch (err) {
    if (!['EACCES', 'EPERM', 'EROFS'].includes(err?.code)) throw err;
    if (!quiet) {
      console.warn(
        `[leasehold] ${BUILD} is not writable (${err.code}): running ${path.relative(ROOT, from)} through tsx`,
      );
    }
    return false;
  }
}

/** True when the bundle exists and nothing it is built from changed since. */
function fresh(file) {
  let built;
  try {
    built = statSync(file).mtimeMs;
  } catch {
    return false;
  }
  if (statSync(fileURLToPath(import.meta.url)).mtimeMs > built) return false;
  return !['src', 'functions'].some((dir) => newerThan(path.join(ROOT, dir), built));
}

function newerThan(dir, when) {
  for (const dirent of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, dirent.name);
    if (dirent.isDirectory() ? newerThan(full, when) : statSync(full).mtimeMs > when) return true;
  }
  return false;
}

async function build(from, to) {
  // Loaded only when a build is due: a fresh start reads no more than the bundle.
  const { build: esbuild } = await import('esbuild');
  mkdirSync(BUILD, { recursive: true });
  const { outputFiles } = await esbuild({
    entryPoints: [from],
    outdir: BUILD,
    entryNames: '[name]',
    // What an entry imports only when it needs it (the embedded database, the telemetry SDK,
    // the server under `leasehold serve`) stays a chunk of its own, loaded then.
    splitting: true,
    chunkNames: '[name]-[hash]',
    outExtension: { '.js': '.mjs' },
    write: false,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    sourcemap: 'linked',
    sourcesContent: false,
    logLevel: 'warning',
  });
  // The entry last: whatever it imports is in place before it is. Chunks are named by their
  // content, so one a running process still loads lazily is never replaced by another.
  const last = (file) => file.path === to;
  for (const file of [...outputFiles.filter((f) => !last(f)), ...outputFiles.filter(last)]) {
    const temp = `${file.path}.${process.pid}.tmp`;
    writeFileSync(temp, file.contents);
    renameSync(temp, file.path);
  }
}
