/**
 * The journal from inside workerd — `wsconnect` over workerd's own WebSocket,
 * one connection per request — opens, appends, runs a tool and commits against a local server.
 */
import { env } from 'cloudflare:test';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { connectJournal, ensureJournalStream, Journal, read } from '../../src/journal/index.js';

const natsUrl = (env as unknown as { NATS_URL: string }).NATS_URL;

describe('the journal inside workerd', () => {
  it('opens, appends, runs a tool and commits through wsconnect with the global WebSocket', async () => {
    const nc = await connectJournal(natsUrl, { reconnect: false });
    try {
      await ensureJournalStream(await jetstreamManager(nc));
      const js = jetstream(nc);
      const run = `workerd${Date.now()}`;
      const task = { runId: run, stepId: 'turn', iteration: 0, attempt: 1, delivered: 1, streamSeq: 0 };
      const journal = await Journal.open(js, task);
      await journal.append('entry', { note: 'from workerd' });
      const result = await journal.tool({ name: 'echo', input: { x: 1 } }, 'safe', async () => ({
        echoed: 1,
      }));
      expect(result.output).toEqual({ echoed: 1 });
      await journal.commit({ action: 'complete', output: { ok: true } });
      const types = (await read(js, run, 'turn')).map((r) => r.type);
      expect(types).toEqual(['claim', 'entry', 'tool.intent', 'tool.result', 'commit']);
    } finally {
      await nc.close();
    }
  });
});
