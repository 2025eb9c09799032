/**
 * The programs the test command needs beyond node_modules and a running PostgreSQL: nats-server
 * (the journal tests start their own) and Chromium (the console's browser tests). The global
 * setup runs this first, so `npm test` and a single `vitest run <file>` provision alike; when
 * both are present it costs a few existsSync calls.
 *
 * A missing program is installed only where that is the machine's way — root on Debian/Ubuntu
 * with apt-get, as CI is — after one line saying so. Anywhere else (not root, no apt, macOS)
 * the run stops at once with one line naming what to install: installing system packages on
 * someone's laptop is theirs to decide. A missing service never skips a test.
 * Free of vitest: `npx tsx test/helpers/prereqs.ts` runs it alone.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { findNatsServer } from '../../functions/nats-server.js';

/** Debian's Chromium: playwright-core downloads no browser. */
export const CHROMIUM = process.env.LEASEHOLD_CHROMIUM || '/usr/bin/chromium';

export interface Prereq {
  name: string;
  /** The Debian package that provides it. */
  pkg: string;
  /** Which tests need it, for the line said before installing. */
  neededBy: string;
  /** The variable that points the tests at another copy. */
  envVar: string;
  /** Set when `envVar` names a path that is not there: then nothing is installed. */
  badOverride?: string;
}

export interface Machine {
  isRoot: boolean;
  hasApt: boolean;
  platform: NodeJS.Platform;
}

export type Plan = { kind: 'ready' } | { kind: 'install'; say: string } | { kind: 'refuse'; say: string };

/** Install or refuse, decided from the machine alone (pure, unit-tested). */
export function plan(missing: Prereq[], machine: Machine): Plan {
  if (missing.length === 0) return { kind: 'ready' };
  const pkgs = missing.map((p) => p.pkg).join(' ');
  const mayInstall = machine.platform === 'linux' && machine.isRoot && machine.hasApt;
  if (mayInstall && !missing.some((p) => p.badOverride)) {
    const why = missing.map((p) => p.neededBy).join(' and ');
    return { kind: 'install', say: `leasehold tests: installing ${pkgs} with apt-get (needed by ${why})` };
  }
  return { kind: 'refuse', say: refusal(missing) };
}

/** The one line naming what to install, or which override points nowhere. */
export function refusal(missing: Prereq[]): string {
  const names = missing.map((p) => p.name).join(' and ');
  const bad = missing.filter((p) => p.badOverride);
  if (bad.length > 0) {
    const paths = bad.map((p) => `${p.envVar}=${p.badOverride}`).join(', ');
    return `leasehold tests need ${names}: ${paths} does not exist; point it at the program or unset it`;
  }
  const them = missing.length > 1 ? 'them' : 'it';
  const pkgs = missing.map((p) => p.pkg).join(' ');
  const vars = missing.map((p) => `${p.envVar}=/path/to/${p.pkg}`).join(' and ');
  return `leasehold tests need ${names}: install ${them} (Debian: apt-get install ${pkgs}) or set ${vars}`;
}

/** What is missing on this machine. */
export function missingPrereqs(): Prereq[] {
  const missing: Prereq[] = [];
  if (!findNatsServer()) {
    missing.push({
      name: 'nats-server',
      pkg: 'nats-server',
      neededBy: 'the journal tests',
      envVar: 'NATS_SERVER_BIN',
    });
  }
  if (!existsSync(CHROMIUM)) {
    missing.push({
      name: 'Chromium',
      pkg: 'chromium',
      neededBy: "the console's browser tests",
      envVar: 'LEASEHOLD_CHROMIUM',
      ...(process.env.LEASEHOLD_CHROMIUM ? { badOverride: CHROMIUM } : {}),
    });
  }
  return missing;
}

/** A missing program, said in `message` (one line, plus apt-get's tail when an install failed). */
export class PrereqError extends Error {
  override name = 'PrereqError';
}

/**
 * `ensureTestPrereqs`, or its message alone and exit 1: thrown out of the global setup, the line
 * would be buried under vitest's "No test files found" and its project filters.
 */
export function ensureTestPrereqsOrExit(): void {
  try {
    ensureTestPrereqs();
  } catch (err) {
    if (!(err instanceof PrereqError)) throw err;
    console.error(err.message);
    process.exit(1);
  }
}

/** Makes sure the programs are there, installing them where allowed; throws PrereqError otherwise. */
export function ensureTestPrereqs(): void {
  const missing = missingPrereqs();
  const decided = plan(missing, {
    isRoot: process.getuid?.() === 0,
    hasApt: existsSync('/usr/bin/apt-get') && existsSync('/etc/debian_version'),
    platform: process.platform,
  });
  if (decided.kind === 'ready') return;
  if (decided.kind === 'refuse') throw new PrereqError(decided.say);
  process.stderr.write(`${decided.say}\n`);
  // Quiet, unattended and bounded: output is kept for a failure; a held dpkg lock is waited
  // for a while; the index is refreshed once (a partly failed refresh may still install).
  const update = aptGet(['update', '-qq'], 180_000);
  const install = aptGet(['install', '-y', '-qq', ...missing.map((p) => p.pkg)], 600_000);
  const still = missingPrereqs();
  if (install.ok && still.length === 0) return;
  const log = `${update.log}${install.log}`.trim().split('\n').slice(-15).join('\n');
  throw new PrereqError(`${refusal(still.length ? still : missing)}\napt-get said:\n${log}`);
}

function aptGet(args: string[], timeout: number): { ok: boolean; log: string } {
  const r = spawnSync('/usr/bin/apt-get', ['-o', 'DPkg::Lock::Timeout=120', ...args], {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    encoding: 'utf8',
    timeout,
    maxBuffer: 64 * 1024 * 1024,
  });
  const failure = r.error ? `apt-get ${args[0]}: ${r.error.message}\n` : '';
  return { ok: r.status === 0, log: `${r.stdout ?? ''}${r.stderr ?? ''}${failure}` };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) ensureTestPrereqsOrExit();
