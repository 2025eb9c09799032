/**
 * Leasehold's real Node server (`npm start`'s `node scripts/launch.mjs functions/node.ts`) for the scenarios that drive it over
 * HTTP, started by the first scenario that needs it and stopped a moment after the last one
 * lets go: scenarios that run back to back (the wire's two, then the platform lane's) share
 * one start instead of paying the server's compile-and-boot each.
 */
import { ENTRY, type RunningServer, startServer } from '../../test/helpers/server.js';
import { scriptProcess } from '../anchors/wire-cycle.js';

export interface LeaseholdServer {
  server: RunningServer;
  /** The node process that runs functions/node.ts (under `npm start`'s launcher, the server's own). */
  scriptPid: number;
}

/** A server of its own, with extra settings (`LEASEHOLD_*`), for a scenario that compares them. */
export async function startLeaseholdServer(
  databaseUrl: string,
  env: Record<string, string>,
): Promise<LeaseholdServer> {
  const server = await startServer({ databaseUrl, env });
  return { server, scriptPid: scriptProcess(server.pid, ENTRY) };
}

/** How long the server outlives its last user, so the next scenario can take it over. */
const LINGER_MS = 1_000;

export const sharedServer = (() => {
  let running: Promise<LeaseholdServer> | undefined;
  let users = 0;
  let idle: NodeJS.Timeout | undefined;
  return {
    async acquire(databaseUrl: string): Promise<LeaseholdServer> {
      users++;
      clearTimeout(idle);
      running ??= startServer({ databaseUrl }).then((server) => ({
        server,
        scriptPid: scriptProcess(server.pid, ENTRY),
      }));
      try {
        return await running;
      } catch (err) {
        users--;
        running = undefined;
        throw err;
      }
    },
    release(): void {
      if (--users > 0 || !running) return;
      const stopping = running;
      idle = setTimeout(() => {
        if (running === stopping) running = undefined;
        void stopping.then((l) => l.server.stop());
      }, LINGER_MS);
      // The process may end first: the server's supervisor ends it then.
      idle.unref();
    },
  };
})();
