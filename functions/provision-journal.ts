/**
 * `npm run journal:provision`: creates the AGENT_JOURNAL stream on NATS_URL, or checks that
 * the existing one keeps the fence (fencing fields are never changed in place) and brings its
 * limits to LEASEHOLD_JOURNAL_MAX_AGE / LEASEHOLD_JOURNAL_MAX_BYTES where those are set. Run
 * it once per deployment, before any journal is opened.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { WebSocket } from 'ws';
import { ConfigError, parseConfig } from '../src/config.js';
import { connectJournal } from '../src/journal/connect.js';
import { ensureJournalStream } from '../src/journal/stream.js';
import { journalStreamOptions } from './settings.js';

async function main(): Promise<void> {
  const config = parseConfig(process.env);
  if (!config.natsUrl)
    throw new ConfigError('NATS_URL is not set (a ws:// or wss:// URL of a JetStream server)');
  const nc = await connectJournal(config.natsUrl, { webSocket: WebSocket, reconnect: false });
  try {
    const { created, updated } = await ensureJournalStream(
      await jetstreamManager(nc),
      journalStreamOptions(config),
    );
    const changed = updated.length > 0 ? `; updated ${updated.join(', ')}` : '';
    console.warn(
      `AGENT_JOURNAL ${created ? 'created' : 'already provisioned and compatible'} (replicas ${config.journalReplicas})${changed}`,
    );
  } finally {
    await nc.close();
  }
}

main().catch((err: unknown) => {
  console.error(`journal:provision failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
