/**
 * The journal while its NATS server is gone: every call fails at once with
 * `JournalUnavailableError` instead of waiting out the client's buffering and timeouts, a write
 * cut off in flight is reported as possibly stored, and the same connection works again once
 * the server is back (restarted in place: same ports, same store).
 */
import { jetstream } from '@nats-io/jetstream';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { check } from '../../src/journal/check.js';
import { JournalUnavailableError } from '../../src/journal/errors.js';
import { Journal } from '../../src/journal/journal.js';
import { OutcomeUnknownError } from '../../src/journal/publish.js';
import { READ_STALL_MS, read, readRange } from '../../src/journal/read.js';
import {
  connectJs,
  nextStatus,
  provisionJournal,
  recordTypes,
  STEP,
  taskOf,
  uniqueRun,
  untilJournalWorks,
} from '../helpers/journal.js';
import { freezeServer, useNatsServer } from '../helpers/nats.js';

/** Failing fast: well under the 2 s publish timeout and the client's 5 s request timeout. */
const FAST_MS = 1_000;
/** The client redials a server every 2 s (+ jitter); the server is ready when start() returns. */
const BACK_WITHIN_MS = 5_000;

async function elapsed<T>(
  op: () => Promise<T>,
): Promise<{ ms: number; value: T | undefined; error: unknown }> {
  const started = performance.now();
  try {
    const value = await op();
    return { ms: performance.now() - started, value, error: undefined };
  } catch (error) {
    return { ms: performance.now() - started, value: undefined, error };
  }
}

describe('the journal during a NATS outage', () => {
  const nats = useNatsServer();
  beforeAll(() => provisionJournal(nats));
  afterEach(async () => {
    // Whatever a test did to the server, the next one finds it running.
    try {
      process.kill(nats.pid, 'SIGCONT');
    } catch {}
    await nats.kill().catch(() => {});
    await nats.start();
  });

  it('appends, opens and reads while the server is down reject at once with JournalUnavailableError, nothing stored', async () => {
    const { nc, js } = await connectJs(nats);
    const run = uniqueRun();
    const j = await Journal.open(js, taskOf(run));
    await j.append('entry', { before: true });
    const dropped = nextStatus(nc, 'disconnect');
    await nats.kill();
    // The client learns of the drop from its socket closing, a moment after the process exits.
    await dropped;

    const append = await elapsed(() => j.append('entry', { during: true }));
    expect(append.error).toBeInstanceOf(JournalUnavailableError);
    expect(append.error).toMatchObject({ mayBeStored: false });
    expect(append.ms).toBeLessThan(FAST_MS);
    const open = await elapsed(() => Journal.open(js, taskOf(uniqueRun())));
    expect(open.error).toBeInstanceOf(JournalUnavailableError);
    expect(open.ms).toBeLessThan(FAST_MS);
    const reading = await elapsed(() => read(js, run, STEP));
    expect(reading.error).toBeInstanceOf(JournalUnavailableError);
    expect(reading.ms).toBeLessThan(FAST_MS);
    const checking = await elapsed(() => check(nc, run));
    expect(checking.error).toBeInstanceOf(JournalUnavailableError);
    expect(checking.ms).toBeLessThan(FAST_MS);

    await nats.start();
    // Nothing was sent, so the handle still writes: the next record takes the refused one's place.
    const recovery = await untilJournalWorks(() => j.append('entry', { after: true }), BACK_WITHIN_MS);
    expect(recovery).toBeLessThan(BACK_WITHIN_MS);
    const records = await read(js, run, STEP);
    expect(records.map((r) => r.data)).toEqual([expect.anything(), { before: true }, { after: true }]);
    expect((await check(nc, run)).ok()).toBe(true);
  });

  it('a write cut off in flight by the connection dropping rejects at once as possibly stored, and the handle writes no more', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const j = await Journal.open(js, taskOf(run));
    // Frozen, the server takes the publish off the socket but never answers; killing it then
    // drops the connection under the waiting publish.
    await freezeServer(nats.pid);
    const pending = elapsed(() => j.append('entry', { inFlight: true }));
    await new Promise((r) => setTimeout(r, 100));
    const killedAt = performance.now();
    await nats.kill();
    const outcome = await pending;
    expect(outcome.error).toBeInstanceOf(OutcomeUnknownError);
    expect(outcome.error).toBeInstanceOf(JournalUnavailableError);
    expect(outcome.error).toMatchObject({ mayBeStored: true });
    // Answered by the drop, not by the 2 s publish timeout.
    expect(performance.now() - killedAt).toBeLessThan(FAST_MS);

    await nats.start();
    await untilJournalWorks(() => read(js, run, STEP), BACK_WITHIN_MS);
    await expect(j.append('entry', { next: true })).rejects.toThrow(/may or may not be stored/);
  });

  it('a connection keeps its JetStream client across a restart in place: the stream and its records are there', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const j = await Journal.open(js, taskOf(run));
    await j.append('entry', { n: 1 });
    await nats.kill();
    await nats.start();
    await untilJournalWorks(() => j.append('entry', { n: 2 }), BACK_WITHIN_MS);
    await j.commit({ action: 'complete' });
    expect(await recordTypes(jetstream(await nats.connect()), run)).toEqual([
      'claim',
      'entry',
      'entry',
      'commit',
    ]);
  });
  it('a range read whose records stop coming while the connection stays up fails with JournalUnavailableError after READ_STALL_MS', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const j = await Journal.open(js, taskOf(run));
    const last = await j.append('entry', { only: true });
    // Two records past the tail never come: what a replicated stream that lost its leader
    // mid-read looks like from the consumer, on a connection that never drops.
    const { ms, error } = await elapsed(() => readRange(js, run, STEP, 1, last + 2));
    expect(error).toBeInstanceOf(JournalUnavailableError);
    expect((error as Error).message).toMatch(/no record for/);
    expect(ms).toBeGreaterThanOrEqual(READ_STALL_MS - 50);
    expect(ms).toBeLessThan(READ_STALL_MS + FAST_MS);
    // The records that are there read as ever.
    expect(await recordTypes(js, run)).toEqual(['claim', 'entry']);
  });
});
