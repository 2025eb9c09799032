import { jetstreamManager } from '@nats-io/jetstream';
import { beforeAll, describe, expect, it } from 'vitest';
import { FencedError, StaleError } from '../../src/journal/errors.js';
import { Journal } from '../../src/journal/journal.js';
import type { Commit, Task } from '../../src/journal/types.js';
import {
  connectJs,
  provisionJournal,
  recordCount,
  recordTypes,
  STEP,
  taskOf,
  uniqueRun,
} from '../helpers/journal.js';
import { useNatsServer } from '../helpers/nats.js';

/**
 * What the journal gives the worker around the lifecycle event. Publishing
 * the event, its MsgID, acking and the engine's idempotency are the worker's and engine's; the
 * last test shows the pattern the glue is meant to follow, on JetStream's own dedup.
 */
describe('Journal.commit and recovery around the lifecycle event', () => {
  const nats = useNatsServer();
  beforeAll(() => provisionJournal(nats));

  const wait = { kind: 'input', request_ids: ['r9'], timeout_ms: 60_000 };

  it('a crash between commit and publish: the redelivery gets committed() and committedSeq(), no claim', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const d1 = await Journal.open(js, taskOf(run));
    const commit: Commit = {
      action: 'continue',
      output: { said: 'hi' },
      state: new Uint8Array([7]),
      retry_after_ms: 5,
    };
    const seq = await d1.commit(commit);

    const d2 = await Journal.open(js, taskOf(run, { delivered: 2 }));
    expect(d2.committed()).toEqual(commit);
    expect(d2.committedSeq()).toBe(seq);
    expect(d2.fenced()).toBe(false);
    expect(await recordTypes(js, run)).toEqual(['claim', 'commit']);
  });

  it('a crash after publish but before ack finds the same commit, from any delivery or resend', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const d1 = await Journal.open(js, taskOf(run));
    const seq = await d1.commit({ action: 'complete', output: 'final' });

    for (const again of [{ delivered: 2 }, { delivered: 3 }, { streamSeq: 11 }] satisfies Partial<Task>[]) {
      const j = await Journal.open(js, taskOf(run, again));
      expect([j.committed(), j.committedSeq()]).toEqual([{ action: 'complete', output: 'final' }, seq]);
    }
    expect(await recordCount(js, run)).toBe(2);
  });

  it('a late redelivery of iteration N after N+1 claimed is stale and writes nothing', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const n = await Journal.open(js, taskOf(run));
    await n.commit({ action: 'continue' });
    await Journal.open(js, taskOf(run, { iteration: 1, streamSeq: 11 }));

    await expect(Journal.open(js, taskOf(run, { delivered: 2 }))).rejects.toThrow(StaleError);
    expect(await recordTypes(js, run)).toEqual(['claim', 'commit', 'claim']);
  });

  it('a recovered continue commit carries the identical wait', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const d1 = await Journal.open(js, taskOf(run));
    await d1.commit({ action: 'continue', wait });

    const d2 = await Journal.open(js, taskOf(run, { delivered: 2 }));
    expect(d2.committed()).toEqual({ action: 'continue', wait });
  });

  it('a fenced worker writes nothing: neither at Open nor at commit', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const d1 = await Journal.open(js, taskOf(run, { delivered: 1 }));
    const d2 = await Journal.open(js, taskOf(run, { delivered: 2 }));

    await expect(d1.commit({ action: 'complete' })).rejects.toThrow(FencedError);
    expect(d1.committed()).toBeNull();
    await expect(Journal.open(js, taskOf(run, { delivered: 1 }))).rejects.toThrow(FencedError);
    expect(await recordTypes(js, run)).toEqual(['claim', 'claim']);
    await d2.commit({ action: 'complete' });
    expect(await recordTypes(js, run)).toEqual(['claim', 'claim', 'commit']);
  });

  it('worker glue pattern: an event rebuilt from committed() under a deterministic id is stored once', async () => {
    const { js, nc } = await connectJs(nats);
    await (await jetstreamManager(nc)).streams.add({ name: 'EVENTS', subjects: ['events.>'] });
    const run = uniqueRun();
    const t = taskOf(run);
    const publishEvent = (j: Journal) => {
      const c = j.committed()!;
      const event = {
        run_id: run,
        step_id: STEP,
        iteration: t.iteration,
        attempt: t.attempt,
        ...c,
        state: undefined,
      };
      return js.publish(`events.step.${c.action}`, JSON.stringify(event), {
        msgID: `${run}.${STEP}.${c.action}.${t.iteration}.${t.attempt}`,
      });
    };
    const d1 = await Journal.open(js, t);
    await d1.commit({ action: 'continue', wait });
    const published = await publishEvent(d1);
    // Crash before the ack: the redelivery republishes from the journal.
    const d2 = await Journal.open(js, taskOf(run, { delivered: 2 }));
    const republished = await publishEvent(d2);

    expect(republished).toEqual({ ...published, duplicate: true });
    const stored = await (await jetstreamManager(nc)).streams.getMessage('EVENTS', { seq: published.seq });
    expect(stored!.json<{ wait: unknown }>().wait).toEqual(wait);
  });
});
