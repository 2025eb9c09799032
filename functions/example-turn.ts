/**
 * An example platform function (`npm run example:turn`): claims one model_turn, runs it as a
 * durable turn — a scripted model asks for one tool call, the tool answers, the model
 * finishes — and completes the item. Run it twice against the same item after killing it
 * mid-turn to watch the journal replay instead of repeating anything.
 *
 * Needs DATABASE_URL and NATS_URL. Prints the outcome as one JSON line.
 */
import { jetstream } from '@nats-io/jetstream';
import { WebSocket } from 'ws';
import { ConfigError, parseConfig } from '../src/config.js';
import { connectPg } from '../src/db/drivers/node-pg.js';
import { connectJournal } from '../src/journal/connect.js';
import { ScriptedModel } from '../src/journal/scripted-model.js';
import { claim } from '../src/queue/claim.js';
import { runDurableTurn } from '../src/turns/durable-turn.js';

const TURN_TTL_MS = 60_000;

async function main(): Promise<void> {
  const config = parseConfig(process.env);
  if (!config.databaseUrl || !config.natsUrl)
    throw new ConfigError('DATABASE_URL and NATS_URL must both be set');
  const pg = connectPg(config.databaseUrl, { max: 2 });
  const nc = await connectJournal(config.natsUrl, { webSocket: WebSocket, reconnect: false });
  try {
    const item = await claim(pg.db, 'model_turn', TURN_TTL_MS);
    if (!item) {
      process.stdout.write(`${JSON.stringify({ outcome: 'idle' })}\n`);
      return;
    }
    const model = new ScriptedModel(
      { tool: { name: 'lookup', input: { session: item.sessionId } } },
      { text: 'the session is in good shape' },
    );
    const outcome = await runDurableTurn(
      { db: pg.db, js: jetstream(nc) },
      item,
      async ({ journal, progress }) => {
        const first = (await journal.model(() => model.respond())) as {
          tool: { name: string; input: object };
        };
        const result = await journal.tool(first.tool as never, 'safe', async () => ({ status: 'ok' }));
        progress();
        const answer = await journal.model(() => model.respond());
        return { action: 'complete', output: { answer, tool: result.output ?? null } };
      },
      { ttlMs: TURN_TTL_MS },
    );
    process.stdout.write(`${JSON.stringify({ item: item.id, ...outcome, requests: model.requests() })}\n`);
  } finally {
    await nc.close();
    await pg.close();
  }
}

main().catch((err: unknown) => {
  console.error(`example:turn failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
