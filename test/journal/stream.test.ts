import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { connectJournal } from '../../src/journal/connect.js';
import {
  JournalTransportError,
  JournalUnavailableError,
  NotProvisionedError,
} from '../../src/journal/errors.js';
import { read } from '../../src/journal/read.js';
import {
  ensureJournalStream,
  JournalStreamMismatchError,
  journalStreamConfig,
} from '../../src/journal/stream.js';
import { useNatsServer } from '../helpers/nats.js';

describe('journal stream provisioning and connection', () => {
  const nats = useNatsServer();

  it('a missing stream reads as NotProvisionedError; provisioning is idempotent', async () => {
    const nc = await nats.connect();
    const js = jetstream(nc);
    await expect(read(js, 'run1', 'step1')).rejects.toThrow(NotProvisionedError);
    const jsm = await jetstreamManager(nc);
    expect(await ensureJournalStream(jsm)).toEqual({ created: true });
    expect(await ensureJournalStream(jsm)).toEqual({ created: false });
    const info = await jsm.streams.info('AGENT_JOURNAL');
    expect(info.config).toMatchObject({ allow_direct: false, deny_delete: true, discard: 'new', max_age: 0 });
    expect(await read(js, 'run1', 'step1')).toEqual([]);
  });

  it('refuses an existing stream whose fencing config differs', async () => {
    const nc = await nats.connect();
    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete('AGENT_JOURNAL').catch(() => {});
    await jsm.streams.add({ ...journalStreamConfig(), allow_direct: true });
    await expect(ensureJournalStream(jsm)).rejects.toThrow(JournalStreamMismatchError);
    await jsm.streams.delete('AGENT_JOURNAL');
  });

  it('fails fast: no WebSocket is a transport error that is no outage, nothing listening is JournalUnavailableError', async () => {
    const started = performance.now();
    const noSocket = await connectJournal(nats.wsUrl, { webSocket: null, timeoutMs: 1000 }).catch((e) => e);
    expect(noSocket).toBeInstanceOf(JournalTransportError);
    expect(noSocket).not.toBeInstanceOf(JournalUnavailableError);
    expect((noSocket as Error).message).toMatch(/no WebSocket/);
    await expect(
      connectJournal('ws://127.0.0.1:1', { webSocket: WebSocket, timeoutMs: 1000 }),
    ).rejects.toThrow(JournalUnavailableError);
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});
