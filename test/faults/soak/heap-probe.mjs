/**
 * Loaded into the server under test with `node --import` (through NODE_OPTIONS): every
 * LEASEHOLD_HEAP_PROBE_MS it forces a full garbage collection and appends the heap in use,
 * RSS and open file descriptors (and how many of them are sockets) to
 * LEASEHOLD_HEAP_PROBE_FILE, one JSON line each. Forcing the collection first is what makes
 * heap growth a measure of what is retained, not of when the collector last ran. Only the
 * server's process reports, no other node process given it.
 */
import { appendFileSync, readdirSync, readlinkSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

const file = process.env.LEASEHOLD_HEAP_PROBE_FILE;
const every = Number(process.env.LEASEHOLD_HEAP_PROBE_MS ?? 5000);

// `npm start`'s launcher (scripts/launch.mjs) names the entry after itself.
const script = process.argv[1]?.endsWith('scripts/launch.mjs') ? process.argv[2] : process.argv[1];
if (file && script?.endsWith('functions/node.ts')) {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc');
  setInterval(() => {
    gc();
    const { heapUsed, rss } = process.memoryUsage();
    const fds = readdirSync('/proc/self/fd');
    // Sockets apart: their number follows how many connections the clients keep open.
    const sockets = fds.filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`).startsWith('socket:');
      } catch {
        return false; // closed since the listing
      }
    }).length;
    appendFileSync(
      file,
      `${JSON.stringify({ pid: process.pid, at: Date.now(), heapUsed, rss, fds: fds.length, sockets })}\n`,
    );
  }, every).unref();
}
