import { jetstreamManager } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { JournalTransportError } from '../../src/journal/errors.js';
import { Journal } from '../../src/journal/journal.js';
import { purgeRun } from '../../src/journal/purge.js';
import { read } from '../../src/journal/read.js';
import { JOURNAL_STREAM } from '../../src/journal/types.js';
import { connectJs, provisionJournal, taskOf } from '../helpers/journal.js';
import { useNatsServer } from '../helpers/nats.js';

describe('purgeRun', () => {
  const nats = useNatsServer();

  it('purges every step of its run and nothing of any other run (not even one whose id it prefixes)', async () => {
    await provisionJournal(nats);
    const { js, nc } = await connectJs(nats);
    const jsm = await jetstreamManager(nc);
    for (const [run, step] of [
      ['sess_a', 'model_turn'],
      ['sess_a', 'tool_exec'],
      ['sess_ab', 'model_turn'],
      ['sess_b', 'model_turn'],
    ] as const) {
      const j = await Journal.open(js, taskOf(run, { stepId: step }));
      await j.append('entry', { run, step });
    }

    expect(await purgeRun(jsm, 'sess_a')).toBe(4);
    expect(await read(js, 'sess_a', 'model_turn')).toEqual([]);
    expect(await read(js, 'sess_a', 'tool_exec')).toEqual([]);
    expect((await read(js, 'sess_ab', 'model_turn')).map((r) => r.type)).toEqual(['claim', 'entry']);
    expect((await read(js, 'sess_b', 'model_turn')).map((r) => r.type)).toEqual(['claim', 'entry']);
    // Idempotent: a second purge (another housekeeping run's, after a lost hold) finds nothing.
    expect(await purgeRun(jsm, 'sess_a')).toBe(0);
  });

  it('a holder still writing to a purged run is refused, never writes through the erased fence', async () => {
    await provisionJournal(nats);
    const { js, nc } = await connectJs(nats);
    const j = await Journal.open(js, taskOf('sess_late'));
    await j.append('entry', { n: 1 });
    await purgeRun(await jetstreamManager(nc), 'sess_late');
    const err = await j.append('entry', { n: 2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JournalTransportError);
    expect(await read(js, 'sess_late', 'agent')).toEqual([]);
  });

  it('a missing stream has nothing to purge; a run id that is not one subject token is refused', async () => {
    const { nc } = await connectJs(nats);
    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete(JOURNAL_STREAM).catch(() => {});
    expect(await purgeRun(jsm, 'sess_gone')).toBe(0);
    await expect(purgeRun(jsm, 'a.>')).rejects.toThrow(TypeError);
  });
});
