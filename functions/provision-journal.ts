/**
 * `npm run journal:provision`: creates the AGENT_JOURNAL stream on NATS_URL, or checks that
 * the existing one keeps the fence (it is never changed in place). Run it once per
 * deployment, before any journal is opened.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { WebSocket } from 'ws';
import { ConfigError, parseConfig } from '../src/config.js';
import { connectJournal } from '../src/journal/connect.js';
import { ensureJournalStream } from '../src/journal/stream.js';

async function main(): Promise<void> {
  const config = parseConfig(process.env);
  if (!config.natsUrl)
    throw new ConfigError('NATS_URL is not set (a ws:// or wss:// URL of a JetStream server)');
  const nc = await connectJournal(config.natsUrl, { webSocket: WebSocket, reconnect: false });
  try {
    const { created } = await ensureJournalStream(await jetstreamManager(nc), {
      replicas: config.journalReplicas,
    });
    console.warn(
      `AGENT_JOURNAL ${created ? 'created' : 'already provisioned and compatible'} (replicas ${config.journalReplicas})`,
    );
  } finally {
    await nc.close();
  }
}

main().catch((err: unknown) => {
  console.error(`journal:provision failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
