import { jetstreamManager } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { JournalTransportError } from '../../src/journal/errors.js';
import { Journal } from '../../src/journal/journal.js';
import { read } from '../../src/journal/read.js';
import { JOURNAL_STREAM } from '../../src/journal/types.js';
import { connectJs, provisionJournal, STEP, taskOf, uniqueRun } from '../helpers/journal.js';
import { useNatsServer } from '../helpers/nats.js';

describe('Journal.append against the stream limits', () => {
  const nats = useNatsServer();

  it('an append over max_msg_size fails as a transport error (10054), leaves no record, and the handle goes on', async () => {
    await provisionJournal(nats, { maxMsgSize: 4096 });
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const j = await Journal.open(js, taskOf(run));

    const err = await j.append('entry', { blob: 'x'.repeat(5_000) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JournalTransportError);
    expect((err as Error).message).toMatch(/10054/);
    expect((await read(js, run, STEP)).map((r) => r.type)).toEqual(['claim']);

    await j.append('entry', { small: true });
    expect((await read(js, run, STEP)).map((r) => r.type)).toEqual(['claim', 'entry']);
  });

  it("an append over the server's max_payload is refused by the client as a transport error", async () => {
    await provisionJournal(nats);
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const j = await Journal.open(js, taskOf(run));

    await expect(j.append('entry', { blob: 'x'.repeat(1_100_000) })).rejects.toThrow(/max_payload/);
    expect((await read(js, run, STEP)).map((r) => r.type)).toEqual(['claim']);
  });

  it('a stream at its byte limit drops its oldest records and never refuses an append', async () => {
    await provisionJournal(nats, { maxBytes: 16_384 });
    const { js, nc } = await connectJs(nats);
    const run = uniqueRun();
    const j = await Journal.open(js, taskOf(run));

    // Far past the budget: every append lands.
    for (let i = 0; i < 100; i++) await j.append('entry', { i, pad: 'x'.repeat(1_000) });
    const info = await (await jetstreamManager(nc)).streams.info(JOURNAL_STREAM);
    expect(info.state.bytes).toBeLessThanOrEqual(16_384);
    expect(info.state.first_seq).toBeGreaterThan(1);
    // What is left is the newest records, in order, ending with the last one written.
    const kept = (await read(js, run, STEP)).map((r) => (r.data as { i: number }).i);
    expect(kept.length).toBeGreaterThan(0);
    expect(kept).toEqual(Array.from({ length: kept.length }, (_, k) => 100 - kept.length + k));
  });

  it('a writer whose records the limit dropped refuses to write through the lost fence', async () => {
    await provisionJournal(nats, { maxBytes: 16_384 });
    const { js } = await connectJs(nats);
    const idle = uniqueRun('idle');
    const j = await Journal.open(js, taskOf(idle));
    await j.append('entry', { before: true });
    // Another run fills the stream: every record of the idle run is dropped.
    const busy = await Journal.open(js, taskOf(uniqueRun('busy')));
    for (let i = 0; i < 40; i++) await busy.append('entry', { i, pad: 'x'.repeat(1_000) });
    expect(await read(js, idle, STEP)).toEqual([]);

    await expect(j.append('entry', { after: true })).rejects.toThrow(/behind/);
    expect(await read(js, idle, STEP)).toEqual([]);
  });
});
