/**
 * Runs the real `leasehold` binary (`node bin/leasehold.mjs …`) as a child process and
 * collects what it printed and how it exited, with a bounded wait. Its environment is the
 * test run's minus every LEASEHOLD_/NATS_/DATABASE_ setting, so only what a test passes counts.
 */
import { execFile, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { serverEnvironment } from '../helpers/server.js';

export const BIN = path.resolve(import.meta.dirname, '../../bin/leasehold.mjs');
/** One command: its start (a rebuild of the bundle after a change) plus a request or a migration. */
const RUN_TIMEOUT_MS = 20_000;

export interface BinResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function leasehold(args: string[], env: Record<string, string> = {}): Promise<BinResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { ...serverEnvironment(), ...env }, timeout: RUN_TIMEOUT_MS },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** `leasehold … --json` that must succeed: its stdout parsed. */
export async function leaseholdJson<T = unknown>(
  args: string[],
  env: Record<string, string> = {},
): Promise<T> {
  const r = await leasehold([...args, '--json'], env);
  if (r.code !== 0) throw new Error(`leasehold ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

/** A long-running `leasehold` (serve, stats --watch): the child, for the test to signal. */
export function spawnLeasehold(args: string[], env: Record<string, string> = {}) {
  return spawn(process.execPath, [BIN, ...args], {
    env: { ...serverEnvironment(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** A loopback port nothing listens on: bound by the OS, then released. */
export function deadPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}
