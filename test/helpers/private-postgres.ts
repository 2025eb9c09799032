/**
 * A private PostgreSQL cluster (initdb into a temp directory, its own port and socket
 * directory) that a test may stop, crash and restart without touching the shared server.
 * The binaries are PostgreSQL's own (`pg_ctl`, `initdb`); the cluster runs as the `postgres`
 * user when the test runs as root, since PostgreSQL refuses to run as root. A missing
 * binary fails the run with a message, never a skip.
 *
 * With `password`, TCP clients must send it in cleartext (`password` authentication), as
 * Neon's proxy asks: the Neon driver's pipelined start-up (password sent before it is asked
 * for) works against it; the trust authentication of the shared server cannot take that.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

const BIN_DIRS = ['/usr/lib/postgresql/15/bin', '/usr/lib/postgresql/16/bin', '/usr/local/bin', '/usr/bin'];

export interface PrivatePostgres {
  port: number;
  /** A URL for `database` on this cluster (user postgres; with its password when it has one). */
  url(database?: string): string;
  /** Creates a database and returns its URL. */
  createDatabase(name: string): Promise<string>;
  /** Stops the server: `immediate` is a crash (no checkpoint, clients cut), `fast` a clean stop. */
  stop(mode?: 'immediate' | 'fast'): Promise<void>;
  /** Starts it again on the same port and data directory, resolving once it accepts connections. */
  start(): Promise<void>;
  /** Stops it (if running) and removes its directory. */
  destroy(): Promise<void>;
}

function binary(name: string): string {
  const dir = BIN_DIRS.find((d) => existsSync(path.join(d, name)));
  if (!dir) {
    throw new Error(
      `${name} is not installed (looked in ${BIN_DIRS.join(', ')}). The database fault tests start ` +
        'a private PostgreSQL cluster: apt-get install postgresql',
    );
  }
  return path.join(dir, name);
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function startPrivatePostgres(options: { password?: string } = {}): Promise<PrivatePostgres> {
  const initdb = binary('initdb');
  const pgCtl = binary('pg_ctl');
  const asRoot = userInfo().uid === 0;
  const dir = await mkdtemp(path.join(tmpdir(), 'leasehold-pg-'));
  const data = path.join(dir, 'data');
  const log = path.join(dir, 'server.log');
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    await chown(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  // As root, run each PostgreSQL command as the postgres user.
  const pgRun = (bin: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', bin, ...args]) : run(bin, args);

  const auth = ['--auth=trust'];
  if (options.password !== undefined) {
    const pwfile = path.join(dir, 'pwfile');
    await writeFile(pwfile, `${options.password}\n`, { mode: 0o644 });
    auth.push('--auth-host=password', `--pwfile=${pwfile}`);
  }
  await pgRun(initdb, ['-D', data, '-U', 'postgres', ...auth, '-E', 'UTF8', '--no-sync']);
  const port = await freePort();
  const serverOptions = [
    `-p ${port}`,
    "-c listen_addresses='127.0.0.1'",
    `-c unix_socket_directories='${dir}'`,
    '-c fsync=on',
    '-c synchronous_commit=on',
    '-c max_connections=100',
  ].join(' ');
  let running = false;

  const start = async () => {
    await pgRun(pgCtl, ['-D', data, '-l', log, '-o', serverOptions, '-w', '-t', '30', 'start']);
    running = true;
  };
  const stop = async (mode: 'immediate' | 'fast' = 'fast') => {
    if (!running) return;
    await pgRun(pgCtl, ['-D', data, '-m', mode, '-w', '-t', '30', 'stop']);
    running = false;
  };
  const user =
    options.password === undefined ? 'postgres' : `postgres:${encodeURIComponent(options.password)}`;
  const url = (database = 'postgres') => `postgres://${user}@127.0.0.1:${port}/${database}`;
  await start();

  return {
    port,
    url,
    createDatabase: async (name) => {
      const client = new pg.Client({ connectionString: url() });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
      } finally {
        await client.end();
      }
      return url(name);
    },
    stop,
    start,
    destroy: async () => {
      await stop('immediate').catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}
