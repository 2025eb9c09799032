/**
 * Node entry (`npm start`): the Hono app on @hono/node-server over a pooled `pg` connection,
 * or — with no DATABASE_URL — over an embedded PGlite database in LEASEHOLD_DATA_DIR.
 * Long polls wake on LISTEN/NOTIFY; housekeeping runs on a timer; SIGTERM drains.
 */
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { WebSocket } from 'ws';
import { createApp } from '../src/api/app.js';
import { PollGate } from '../src/api/poll-gate.js';
import type { ApiDeps, JournalDeps } from '../src/api/types.js';
import { WakeHub } from '../src/api/wake.js';
import { ADMIN_KEY_REPLACED } from '../src/auth/configured-admin-key.js';
import { ensureConfiguredAdminKey, hasAdminKey, issueApiKey } from '../src/auth/credentials.js';
import { type Config, ConfigError, parseConfig } from '../src/config.js';
import { registerConsole } from '../src/console/index.js';
import { connectPg, listenPg, migratePg } from '../src/db/drivers/node-pg.js';
import type { Database } from '../src/db/handle.js';
import { runOnce, vacuumSchedule } from '../src/housekeeping/index.js';
import { connectJournal } from '../src/journal/connect.js';
import { ensureJournalStream } from '../src/journal/stream.js';
import { TURN_CHANNEL } from '../src/loop/index.js';
import { notifiedEnvironment, WORK_CHANNEL, wireFolds } from '../src/queue/index.js';
import { SESSION_EVENTS_CHANNEL } from '../src/sessions/index.js';
import { type BrainLoop, modelFromConfig, startBrainLoop, TURNS } from './brain-loop.js';
import { lingerOnClose } from './lingering-close.js';
import { housekeepingOptions, journalStreamOptions } from './settings.js';
import { loadStaticFiles } from './static-files.js';
import type { Telemetry } from './telemetry.js';

const MIGRATIONS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../drizzle');

const log = {
  info: (message: string) => console.warn(`[leasehold] ${message}`),
  warn: (message: string, fields?: Record<string, unknown>) =>
    console.warn(`[leasehold] warn: ${message}`, fields ? JSON.stringify(fields) : ''),
  error: (message: string, fields?: Record<string, unknown>) =>
    console.error(`[leasehold] error: ${message}`, fields ? JSON.stringify(fields) : ''),
};

interface Storage {
  db: Database;
  description: string;
  /** The embedded PGlite: no autovacuum runs there, so housekeeping vacuums. */
  embedded: boolean;
  close(): Promise<void>;
}

async function openStorage(config: Config, hubs: Hubs): Promise<Storage> {
  const { work: hub, sessions, turns } = hubs;
  // A payload that names no environment readably wakes every watcher.
  const notify = (payload: string) => {
    const environmentId = notifiedEnvironment(payload);
    if (environmentId === null) hub.notifyAll();
    else hub.notify(environmentId);
  };
  // A session's log grew (or the session went): the payload is its id.
  const notifySession = (payload: string) => sessions.notify(payload);
  // A session's next turn was enqueued: any brain slot may take it.
  const notifyTurn = () => turns.notify(TURNS);
  const reconnected = () => {
    hub.notifyAll();
    sessions.notifyAll();
    turns.notifyAll();
  };
  const onNotification = (payload: string, channel: string) => {
    if (channel === WORK_CHANNEL) notify(payload);
    else if (channel === SESSION_EVENTS_CHANNEL) notifySession(payload);
    else notifyTurn();
  };
  if (config.databaseUrl) {
    const conn = connectPg(config.databaseUrl, {
      prepare: config.preparedStatements,
      max: config.dbPoolSize,
      acquireTimeoutMs: config.dbAcquireTimeoutMs,
      onError: (err) => log.warn('idle connection error', { error: err.message }),
    });
    await migratePg(conn.db, MIGRATIONS, config.databaseUrl);
    const listener = listenPg(
      config.databaseUrl,
      [WORK_CHANNEL, SESSION_EVENTS_CHANNEL, TURN_CHANNEL],
      onNotification,
      reconnected,
      (err) => log.warn('listen connection error', { error: err.message }),
    );
    return {
      db: conn.db,
      description: 'PostgreSQL (DATABASE_URL)',
      embedded: false,
      close: async () => {
        await listener.close();
        await conn.close();
      },
    };
  }
  const dataDir = path.resolve(config.dataDir);
  await mkdir(dataDir, { recursive: true });
  // Loaded only when used: the embedded database alone is ~50 MB of a server's memory.
  const { migratePglite, openPglite } = await import('../src/db/drivers/pglite.js');
  const lite = await openPglite(dataDir);
  await migratePglite(lite.db, MIGRATIONS);
  const unlisten = await lite.client.listen(WORK_CHANNEL, notify);
  const unlistenSessions = await lite.client.listen(SESSION_EVENTS_CHANNEL, notifySession);
  const unlistenTurns = await lite.client.listen(TURN_CHANNEL, notifyTurn);
  return {
    db: lite.db,
    description: `embedded PGlite in ${dataDir}`,
    embedded: true,
    close: async () => {
      await unlisten();
      await unlistenSessions();
      await unlistenTurns();
      await lite.close();
    },
  };
}

interface Hubs {
  work: WakeHub;
  sessions: WakeHub;
  turns: WakeHub;
}

/** How long a drain lets open event streams run before cutting them (clients reconnect). */
const STREAM_DRAIN_GRACE_MS = 1_500;

/**
 * The brain in this process when LEASEHOLD_MODEL names a model; it needs the journal, so
 * without NATS_URL the server refuses to start, naming the setting.
 */
async function startBrain(
  config: Config,
  db: Database,
  journal: JournalDeps | null,
  turns: WakeHub,
): Promise<BrainLoop | null> {
  const model = await modelFromConfig(config);
  if (!model) return null;
  if (!journal)
    throw new ConfigError(
      'LEASEHOLD_MODEL needs NATS_URL: the brain records every model call in the journal',
    );
  return startBrainLoop({ db, js: journal.js, model, wake: turns, log }, config.brainSlots);
}

/** Makes sure someone can administer the server: the configured key, or a generated one on disk. */
async function ensureAdmin(db: Database, config: Config): Promise<void> {
  if (config.adminKey) {
    if (!(await ensureConfiguredAdminKey(db, config.adminKey))) log.warn(ADMIN_KEY_REPLACED);
    return;
  }
  if (await hasAdminKey(db)) return;
  const issued = await issueApiKey(db, 'generated admin key', 'admin', null);
  const file = path.join(path.resolve(config.dataDir), '..', 'admin-key');
  await writeFile(file, `${issued.key}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
  log.info(`created the first admin API key; it is in ${file} (shown nowhere else)`);
}

/**
 * The journal's connection, with the stream provisioned (idempotent; refuses a stream whose
 * config would break the fence). Null when NATS_URL is unset: journal routes then answer 503.
 */
async function openJournal(config: Config): Promise<JournalDeps | null> {
  if (!config.natsUrl) {
    log.info('NATS_URL is not set: the journal is off');
    return null;
  }
  const nc = await connectJournal(config.natsUrl, { webSocket: WebSocket });
  await ensureJournalStream(await jetstreamManager(nc), journalStreamOptions(config));
  log.info(`journal on ${config.natsUrl}`);
  return { nc, js: jetstream(nc) };
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = parseConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`[leasehold] configuration error: ${err.message}`);
      process.exit(1);
    }
    throw err;
  }
  const hubs: Hubs = { work: new WakeHub(), sessions: new WakeHub(), turns: new WakeHub() };
  const storage = await openStorage(config, hubs);
  await ensureAdmin(storage.db, config);
  const journal = await openJournal(config);
  // The OpenTelemetry SDK (~40 MB resident) is loaded only when there is somewhere to export.
  const telemetry: Telemetry = config.otlpEndpoint
    ? (await import('./telemetry.js')).startTelemetry(config, storage.db, log)
    : { shutdown: async () => {} };

  const deps: ApiDeps = {
    db: storage.db,
    // Every request shares the pool: concurrent work API calls fold into shared statements.
    workCalls: wireFolds(storage.db),
    wake: hubs.work,
    sessionWake: hubs.sessions,
    // The loop's turn channel names the one kind it notifies: model_turn (TURNS).
    claimWake: hubs.turns,
    log,
    // One connection for the process, opened at start: every request shares it.
    journal: journal ? () => Promise.resolve(journal) : undefined,
  };
  const brain = await startBrain(config, storage.db, journal, hubs.turns);
  const pollGate = new PollGate({ perKey: config.longPollsPerKey, perProcess: config.longPollsPerProcess });
  const app = createApp(deps, {
    pollGate,
    staticFiles: loadStaticFiles(),
    console: registerConsole,
  });
  const server = serve(
    {
      fetch: app.fetch,
      port: config.port,
      hostname: config.host,
      // Node checks the timeout on an interval (30 s by default): a quarter of it keeps the
      // bound within a quarter of the setting.
      serverOptions: {
        requestTimeout: config.requestTimeoutMs,
        connectionsCheckingInterval: Math.min(30_000, Math.ceil(config.requestTimeoutMs / 4)),
      },
    },
    (info) => log.info(`listening on http://${info.address}:${info.port} (${storage.description})`),
  );
  lingerOnClose(server as Server);

  // Each run is bounded and safe to overlap with another replica's; 0 leaves it to others.
  let housekeeping: Promise<unknown> = Promise.resolve();
  // The journal's manager is asked for per run, and only when a purge is due: a cached one
  // would keep a failure from an outage for good.
  const housekeepingDeps = {
    db: storage.db,
    journal: journal ? () => jetstreamManager(journal.nc) : undefined,
  };
  // No autovacuum runs in the embedded database: housekeeping vacuums it, the churned tables
  // every run and the whole database at the first run and once a day (logged with its stall).
  const vacuumScope = storage.embedded ? vacuumSchedule() : null;
  const timer =
    config.housekeepingEveryMs > 0
      ? setInterval(() => {
          const vacuum = vacuumScope?.(performance.now());
          const started = performance.now();
          housekeeping = runOnce({ ...housekeepingDeps, vacuum }, housekeepingOptions(config))
            .then(() => {
              if (vacuum !== 'database') return;
              log.info(
                `housekeeping vacuumed the embedded database (the run took ${Math.round(performance.now() - started)} ms)`,
              );
            })
            .catch((err: Error) => log.warn('housekeeping', { error: err.message }));
        }, config.housekeepingEveryMs)
      : undefined;

  let stopping = false;
  // Responses in flight. server.close() waits for every open socket, and a client keeps its
  // keep-alive socket for seconds after an answer: a drain therefore answers each request in
  // flight (and any that still arrives) with `Connection: close`.
  const unanswered = new Set<ServerResponse>();
  server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
    if (stopping) res.setHeader('connection', 'close');
    unanswered.add(res);
    res.once('close', () => unanswered.delete(res));
  });
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal}: draining`);
    clearInterval(timer);
    for (const res of unanswered) if (!res.headersSent) res.setHeader('connection', 'close');
    // Stop accepting and close idle sockets (Node ≥ 19); in-flight requests (long polls
    // included, ≤ 1 s) are answered first, each closing its socket.
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // Event streams never end by themselves: cut them after the drain's grace.
    const cut = setTimeout(() => (server as Server).closeAllConnections(), STREAM_DRAIN_GRACE_MS);
    await closed;
    clearTimeout(cut);
    await brain?.stop();
    await housekeeping;
    await journal?.nc.close();
    await telemetry.shutdown(); // its last collection reads the database
    await storage.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  console.error('[leasehold] failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
});
