import { beforeAll, describe, expect, it } from 'vitest';
import { Journal } from '../../src/journal/journal.js';
import { read } from '../../src/journal/read.js';
import { journalSubject } from '../../src/journal/types.js';
import { connectJs, provisionJournal, rawPublish, STEP, taskOf, uniqueRun } from '../helpers/journal.js';
import { useNatsServer } from '../helpers/nats.js';

const WINDOW_NS = 1_000_000_000;

describe('Journal.append after the dedup window', () => {
  const nats = useNatsServer();
  // A 1 s window, so the server forgets a msg id within the test.
  beforeAll(() => provisionJournal(nats, { duplicateWindowNs: WINDOW_NS }));

  it('an identical resend after the window is refused, and the re-read finds it by index: one record', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const t = taskOf(run);
    const j = await Journal.open(js, t);
    // The append's first publish, whose PubAck the writer "lost": stored under index 1.
    const landed = await rawPublish(js, t, 'entry', { once: true }, 1, j.seq());

    // Wait on the server's own timer: a probe id published after ours stops being a duplicate
    // only once the window has passed, so ours is forgotten too.
    const probeSubject = journalSubject(`${run}probe`, STEP);
    await js.publish(probeSubject, 'p', { msgID: `${run}-probe` });
    const deadline = Date.now() + 5_000;
    for (;;) {
      await new Promise((r) => setTimeout(r, 200));
      const ack = await js.publish(probeSubject, 'p', { msgID: `${run}-probe` });
      if (!ack.duplicate) break;
      if (Date.now() > deadline) throw new Error('the dedup window never expired');
    }

    // The identical resend is now refused by the fence (10071), not answered "duplicate"...
    const refused = await rawPublish(js, t, 'entry', { once: true }, 1, j.seq()).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 10071 });
    // ...and the writer's own resend resolves it by re-reading: its index is already stored.
    const seq = await j.append('entry', { once: true });
    expect(seq).toBe(landed.seq);
    expect(j.fenced()).toBe(false);
    const records = await read(js, run, STEP);
    expect(records.map((r) => r.type)).toEqual(['claim', 'entry']);

    // The index moved on: the next record is a new one, fenced on the landed record.
    const next = await j.append('entry', { twice: false });
    expect((await read(js, run, STEP)).at(-1)).toMatchObject({
      seq: next,
      index: 2,
      expectedSeq: landed.seq,
    });
  });
});
