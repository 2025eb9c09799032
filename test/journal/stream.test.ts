import { DiscardPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { connectJournal } from '../../src/journal/connect.js';
import {
  JournalTransportError,
  JournalUnavailableError,
  NotProvisionedError,
} from '../../src/journal/errors.js';
import { Journal } from '../../src/journal/journal.js';
import { read } from '../../src/journal/read.js';
import {
  fenceHolds,
  parseVersion,
  REPLICATED_FENCE_MIN_VERSION,
  ReplicatedFenceUnsupportedError,
} from '../../src/journal/server-version.js';
import {
  ensureJournalStream,
  JournalStreamMismatchError,
  journalStreamConfig,
} from '../../src/journal/stream.js';
import { recordCount, STEP, taskOf } from '../helpers/journal.js';
import { useNatsServer } from '../helpers/nats.js';

const DAY_MS = 86_400_000;

describe('journal stream provisioning and connection', () => {
  const nats = useNatsServer();

  it('a missing stream reads as NotProvisionedError; provisioning is idempotent', async () => {
    const nc = await nats.connect();
    const js = jetstream(nc);
    await expect(read(js, 'run1', 'step1')).rejects.toThrow(NotProvisionedError);
    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete('AGENT_JOURNAL').catch(() => {});
    expect(await ensureJournalStream(jsm)).toEqual({ created: true, updated: [] });
    expect(await ensureJournalStream(jsm)).toEqual({ created: false, updated: [] });
    const info = await jsm.streams.info('AGENT_JOURNAL');
    // No limit unless one is given; at a limit the oldest records go, never an append.
    expect(info.config).toMatchObject({
      allow_direct: false,
      deny_delete: true,
      deny_purge: false,
      discard: 'old',
      max_age: 0,
      max_bytes: -1,
    });
    expect(await read(js, 'run1', 'step1')).toEqual([]);
  });

  it('an existing stream is brought to discard old and the given limits in place, keeping every record', async () => {
    const nc = await nats.connect();
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete('AGENT_JOURNAL').catch(() => {});
    // As streams were provisioned before: discard new, no limits.
    await jsm.streams.add({ ...journalStreamConfig(), discard: DiscardPolicy.New });
    const journal = await Journal.open(js, taskOf('kept'));
    await journal.append('entry', { n: 1 });

    expect(await ensureJournalStream(jsm, { maxAgeMs: 90 * DAY_MS, maxBytes: 1 << 30 })).toEqual({
      created: false,
      updated: ['discard', 'max_age', 'max_bytes'],
    });
    const info = await jsm.streams.info('AGENT_JOURNAL');
    expect(info.config).toMatchObject({
      discard: 'old',
      max_age: 90 * DAY_MS * 1_000_000,
      max_bytes: 1 << 30,
    });
    expect((await read(js, 'kept', STEP)).map((r) => r.type)).toEqual(['claim', 'entry']);
    // The handle writes on across the update: the fence is where it was.
    await journal.append('entry', { n: 2 });
    expect(await recordCount(js, 'kept')).toBe(3);

    // Without limits, a process leaves another's alone; 0 lifts them.
    expect(await ensureJournalStream(jsm)).toEqual({ created: false, updated: [] });
    expect((await jsm.streams.info('AGENT_JOURNAL')).config).toMatchObject({
      max_age: 90 * DAY_MS * 1_000_000,
    });
    expect(await ensureJournalStream(jsm, { maxAgeMs: 0, maxBytes: 0 })).toEqual({
      created: false,
      updated: ['max_age', 'max_bytes'],
    });
    expect((await jsm.streams.info('AGENT_JOURNAL')).config).toMatchObject({ max_age: 0, max_bytes: -1 });
  });

  it('refuses an existing stream that denies purges (a deleted session could never be reclaimed)', async () => {
    const nc = await nats.connect();
    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete('AGENT_JOURNAL').catch(() => {});
    await jsm.streams.add({ ...journalStreamConfig(), deny_purge: true });
    await expect(ensureJournalStream(jsm)).rejects.toThrow(/deny_purge/);
    await jsm.streams.delete('AGENT_JOURNAL');
  });

  it('refuses an existing stream whose fencing config differs', async () => {
    const nc = await nats.connect();
    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete('AGENT_JOURNAL').catch(() => {});
    await jsm.streams.add({ ...journalStreamConfig(), allow_direct: true });
    await expect(ensureJournalStream(jsm)).rejects.toThrow(JournalStreamMismatchError);
    await jsm.streams.delete('AGENT_JOURNAL');
  });

  it('refuses a replicated stream before asking the server when the server is older than the fence needs', async () => {
    const nc = await nats.connect();
    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete('AGENT_JOURNAL').catch(() => {});
    const version = nc.info!.version;
    if (fenceHolds(version, 3)) return;
    const err = await ensureJournalStream(jsm, { replicas: 3 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReplicatedFenceUnsupportedError);
    expect((err as Error).message).toContain(
      `needs nats-server ≥ ${REPLICATED_FENCE_MIN_VERSION}, this is ${version}`,
    );
    expect((err as Error).message).not.toContain('\n');
    await expect(jsm.streams.info('AGENT_JOURNAL')).rejects.toMatchObject({ code: 10059 });
  });

  it('a replicated stream keeps the fence from 2.11.0 on; one replica on any version', () => {
    expect(parseVersion('2.9.10')).toEqual([2, 9, 10]);
    expect(parseVersion('v2.11.0-RC.2')).toEqual([2, 11, 0]);
    expect(parseVersion('nightly')).toBeNull();
    for (const version of ['2.9.10', '2.9.25', '2.10.29', 'nightly']) {
      expect(fenceHolds(version, 3), version).toBe(false);
      expect(fenceHolds(version, 1), version).toBe(true);
    }
    for (const version of ['2.11.0', '2.11.3', '2.12.1', '3.0.0'])
      expect(fenceHolds(version, 3), version).toBe(true);
  });

  it('connects through a comma-separated list of servers, passing over one that does not answer', async () => {
    const nc = await connectJournal(`ws://127.0.0.1:1, ${nats.wsUrl}`, {
      webSocket: WebSocket,
      timeoutMs: 5_000,
    });
    try {
      expect(nc.info?.jetstream).toBe(true);
    } finally {
      await nc.close();
    }
    await expect(
      connectJournal(`${nats.wsUrl},nats://127.0.0.1:4222`, { webSocket: WebSocket }),
    ).rejects.toThrow(/ws:\/\/ or wss:\/\/, got nats:/);
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
