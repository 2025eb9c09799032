/**
 * The brain as its own process (`npm run brain`, `leasehold brain`): it claims the sessions'
 * `model_turn` items from the PostgreSQL the servers use and runs each as a durable turn
 * (functions/brain-loop.ts), so model calls scale apart from the HTTP API. It needs
 * DATABASE_URL (the embedded database lives inside one process and cannot be shared), NATS_URL
 * (every model call is recorded in the journal) and LEASEHOLD_MODEL; LEASEHOLD_BRAIN_SLOTS
 * turns run at once. New turns wake it over LISTEN; SIGTERM or SIGINT stops claiming, lets
 * the turns in hand finish, and exits 0.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { WebSocket } from 'ws';
import { WakeHub } from '../src/api/wake.js';
import { type Config, ConfigError, parseConfig } from '../src/config.js';
import { connectPg, listenPg, migratePg } from '../src/db/drivers/node-pg.js';
import { connectJournal } from '../src/journal/connect.js';
import { ensureJournalStream } from '../src/journal/stream.js';
import { TURN_CHANNEL } from '../src/loop/index.js';
import type { Model } from '../src/turns/model.js';
import { modelFromConfig, startBrainLoop, TURNS } from './brain-loop.js';
import { journalStreamOptions } from './settings.js';

const MIGRATIONS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../drizzle');

const log = {
  info: (message: string) => console.warn(`[leasehold] ${message}`),
  warn: (message: string, fields?: Record<string, unknown>) =>
    console.warn(`[leasehold] warn: ${message}`, fields ? JSON.stringify(fields) : ''),
  error: (message: string, fields?: Record<string, unknown>) =>
    console.error(`[leasehold] error: ${message}`, fields ? JSON.stringify(fields) : ''),
};

/** What the brain cannot run without, one line each (empty when all is there). */
function missingSettings(config: Config): string[] {
  const missing: string[] = [];
  if (!config.databaseUrl)
    missing.push(
      'the brain needs DATABASE_URL, the PostgreSQL its servers use (the embedded database cannot be shared between processes)',
    );
  if (!config.natsUrl) missing.push('the brain needs NATS_URL: it records every model call in the journal');
  if (!config.model)
    missing.push('the brain needs LEASEHOLD_MODEL: anthropic, or scripted:<file of Messages responses>');
  return missing;
}

function refuse(lines: string[]): never {
  for (const line of lines) console.error(`[leasehold] configuration error: ${line}`);
  process.exit(1);
}

/** The configured model; an unreadable or invalid script is a configuration error naming it. */
async function loadModel(config: Config): Promise<Model> {
  try {
    return (await modelFromConfig(config))!;
  } catch (err) {
    if (config.model?.kind !== 'scripted') throw err;
    refuse([`LEASEHOLD_MODEL=scripted:${config.model.file}: ${(err as Error).message}`]);
  }
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = parseConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) refuse([err.message]);
    throw err;
  }
  const missing = missingSettings(config);
  if (missing.length > 0) refuse(missing);
  const databaseUrl = config.databaseUrl!;
  const natsUrl = config.natsUrl!;
  const model = await loadModel(config);

  const conn = connectPg(databaseUrl, {
    prepare: config.preparedStatements,
    max: config.dbPoolSize,
    acquireTimeoutMs: config.dbAcquireTimeoutMs,
    onError: (err) => log.warn('idle connection error', { error: err.message }),
  });
  // Whichever of the brain and the servers starts first applies them (under a lock).
  await migratePg(conn.db, MIGRATIONS, databaseUrl);
  const nc = await connectJournal(natsUrl, { webSocket: WebSocket });
  await ensureJournalStream(await jetstreamManager(nc), journalStreamOptions(config));

  // A session's next turn was enqueued: any slot may take it. After a reconnect a
  // notification may have been missed, so every slot looks.
  const turns = new WakeHub();
  const listener = listenPg(
    databaseUrl,
    [TURN_CHANNEL],
    () => turns.notify(TURNS),
    () => turns.notifyAll(),
    (err) => log.warn('listen connection error', { error: err.message }),
  );
  const modelName = config.model!.kind === 'scripted' ? `scripted:${config.model!.file}` : 'anthropic';
  log.info(`brain on PostgreSQL (DATABASE_URL), journal on ${natsUrl}, model ${modelName}`);
  const brain = startBrainLoop(
    { db: conn.db, js: jetstream(nc), model, wake: turns, log },
    config.brainSlots,
  );

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal}: draining (no new turns; finishing the turns in hand)`);
    try {
      await brain.stop();
      await listener.close();
      await nc.close();
      await conn.close();
    } catch (err) {
      log.error('drain failed', { error: (err as Error).message });
      process.exit(1);
    }
    log.info('drained');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  console.error('[leasehold] failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
});
