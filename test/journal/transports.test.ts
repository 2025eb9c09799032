/**
 * The fence lives in the server, not in the transport — a claim written over a
 * websocket fences a writer on plain TCP, and the reverse. (Its own file: nats-core's
 * transport factory is process-global, and vitest gives each file its own process.)
 */
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { ensureJournalStream, FencedError, Journal, type Task } from '../../src/journal/index.js';
import { useNatsServer } from '../helpers/nats.js';

const task = (runId: string, delivered: number): Task => ({
  runId,
  stepId: 'step',
  iteration: 0,
  attempt: 1,
  delivered,
  streamSeq: 0,
});

describe('fencing across transports', () => {
  const nats = useNatsServer();

  it('a claim made over a websocket fences a TCP writer, and a TCP claim fences a websocket writer', async () => {
    const tcp = await connect({ servers: `127.0.0.1:${nats.port}` });
    try {
      // Whichever transport connected last installed its factory; connect both up front.
      const ws = await nats.connect();
      await ensureJournalStream(await jetstreamManager(ws));

      const tcpHolder = await Journal.open(jetstream(tcp), task('xport1', 1));
      await tcpHolder.append('entry', { via: 'tcp' });
      await Journal.open(jetstream(ws), task('xport1', 2));
      await expect(tcpHolder.append('entry', { via: 'tcp, late' })).rejects.toThrow(FencedError);

      const wsHolder = await Journal.open(jetstream(ws), task('xport2', 1));
      await wsHolder.append('entry', { via: 'ws' });
      await Journal.open(jetstream(tcp), task('xport2', 2));
      await expect(wsHolder.append('entry', { via: 'ws, late' })).rejects.toThrow(FencedError);
    } finally {
      await tcp.close();
    }
  });
});
