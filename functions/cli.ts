/**
 * `leasehold` (bin/leasehold.mjs): wires the CLI (`src/cli/`) to this process — argv, the
 * environment, stdout/stderr, fetch, Ctrl-C and the exit code — and gives it the four
 * operations that are not HTTP calls: running the Node server, running the brain, migrating a
 * database, and provisioning the journal stream, each with the same code the server and
 * scripts use.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CliDeps, runCli } from '../src/cli/index.js';

const MIGRATIONS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../drizzle');

let interrupt: AbortController | undefined;

const deps: CliDeps = {
  env: process.env,
  stdout: process.stdout,
  stderr: process.stderr,
  fetch: globalThis.fetch,
  sleep: (ms, signal) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done, { once: true });
    }),
  interrupt: () => {
    if (!interrupt) {
      interrupt = new AbortController();
      const controller = interrupt;
      process.once('SIGINT', () => controller.abort());
    }
    return interrupt.signal;
  },
  // The server itself, in this process: importing the entry starts it, and it owns the
  // process from then on (its SIGTERM/SIGINT drain ends it with process.exit).
  serve: async () => {
    await import('./node.js');
    await new Promise<never>(() => {});
  },
  // The brain alike: its entry owns the process once imported.
  brain: async () => {
    await import('./brain.js');
    await new Promise<never>(() => {});
  },
  // The database and NATS clients load only for the commands that use them: every other
  // command starts faster without them.
  migrate: async (databaseUrl) => {
    const { connectPg, migratePg } = await import('../src/db/drivers/node-pg.js');
    const conn = connectPg(databaseUrl, { max: 1 });
    try {
      await migratePg(conn.db, MIGRATIONS, databaseUrl);
    } finally {
      await conn.close();
    }
  },
  provisionJournal: async (natsUrl, replicas) => {
    const [{ jetstreamManager }, { WebSocket }, { connectJournal }, { ensureJournalStream }] =
      await Promise.all([
        import('@nats-io/jetstream'),
        import('ws'),
        import('../src/journal/connect.js'),
        import('../src/journal/stream.js'),
      ]);
    const nc = await connectJournal(natsUrl, { webSocket: WebSocket, reconnect: false });
    try {
      return await ensureJournalStream(await jetstreamManager(nc), { replicas });
    } finally {
      await nc.close();
    }
  },
};

// Stdout is flushed before the exit: a piped `--json` document must arrive whole.
const code = await runCli(process.argv.slice(2), deps);
process.exitCode = code;
process.stdout.write('', () => process.exit(code));
