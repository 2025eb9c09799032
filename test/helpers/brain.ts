/**
 * The brain as its own process (`node scripts/launch.mjs functions/brain.ts`, what `npm run brain` runs) under the
 * same supervisor as the test server (server.ts), for tests that run it beside a Node server
 * on one database and signal it the way a process manager does.
 */
import path from 'node:path';
import { LAUNCH, ROOT, serverEnvironment, supervise } from './server.js';

export const BRAIN_ENTRY = path.join(ROOT, 'functions/brain.ts');

/** How long the brain may take to say it is claiming (a changed source is bundled first). */
const START_TIMEOUT_MS = 30_000;

export interface RunningBrain {
  /** The pid of the brain's process (as under `npm run brain`: one process, the script's). */
  pid: number;
  /** Settles with the brain's exit code (128 + n when signal n ended it). */
  exited: Promise<number>;
  /** Everything it wrote so far (the last 64 KiB). */
  output(): string;
  /** SIGTERM, bounded wait, then the group is killed; idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts the brain with `env` (and nothing else the brain reads) and resolves once its slots
 * are claiming. Fails with its output when it exits first or does not get there in time.
 */
export async function startBrain(env: Record<string, string>): Promise<RunningBrain> {
  const proc = supervise([process.execPath, LAUNCH, BRAIN_ENTRY], {
    cwd: ROOT,
    env: { ...serverEnvironment(), ...env },
  });
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!proc.output().includes('turn slots')) {
    if (proc.hasExited()) {
      const code = await proc.exited;
      await proc.stop();
      throw new Error(
        `the brain exited before it started (exit code ${code}); its output:\n${proc.output()}`,
      );
    }
    if (Date.now() > deadline) {
      await proc.stop();
      throw new Error(`the brain did not start within ${START_TIMEOUT_MS} ms; its output:\n${proc.output()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const pid = await proc.pid;
  proc.disconnect();
  return { pid, exited: proc.exited, output: proc.output, stop: proc.stop };
}
