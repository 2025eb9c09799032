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

  it('an append over max_msg_size fails as a transport error (10054), leaves no record, and the handle goes on (26)', async () => {
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

  it("an append over the server's max_payload is refused by the client as a transport error (26)", async () => {
    await provisionJournal(nats);
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const j = await Journal.open(js, taskOf(run));

    await expect(j.append('entry', { blob: 'x'.repeat(1_100_000) })).rejects.toThrow(/max_payload/);
    expect((await read(js, run, STEP)).map((r) => r.type)).toEqual(['claim']);
  });

  it('a full stream surfaces 10077 as a transport error and no older record disappears (27)', async () => {
    await provisionJournal(nats, { maxBytes: 16_384 });
    const { js, nc } = await connectJs(nats);
    const run = uniqueRun();
    const j = await Journal.open(js, taskOf(run));

    let err: unknown;
    for (let i = 0; i < 100 && !err; i++) {
      err = await j.append('entry', { i, pad: 'x'.repeat(1_000) }).then(
        () => undefined,
        (e: unknown) => e,
      );
    }
    expect(err).toBeInstanceOf(JournalTransportError);
    expect((err as Error).message).toMatch(/10077/);
    const records = await read(js, run, STEP);
    // discard=new: the first record is still the claim, and every entry written is there.
    expect(records[0]!.type).toBe('claim');
    expect(records.slice(1).map((r) => (r.data as { i: number }).i)).toEqual(
      Array.from({ length: records.length - 1 }, (_, i) => i),
    );
    const info = await (await jetstreamManager(nc)).streams.info(JOURNAL_STREAM);
    expect(info.state.first_seq).toBe(1);
  });
});
