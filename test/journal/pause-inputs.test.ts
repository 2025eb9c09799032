import { AckPolicy, jetstreamManager } from '@nats-io/jetstream';
import { nanos } from '@nats-io/nats-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { check } from '../../src/journal/check.js';
import { Journal } from '../../src/journal/journal.js';
import { read } from '../../src/journal/read.js';
import {
  connectJs,
  provisionJournal,
  rawPublish,
  recordTypes,
  STEP,
  taskOf,
  uniqueRun,
} from '../helpers/journal.js';
import { useNatsServer } from '../helpers/nats.js';

describe('Journal pause/resume and placed inputs', () => {
  const nats = useNatsServer();
  beforeAll(() => provisionJournal(nats));

  it('pause writes a record, the nak delays the next delivery, which resumes it with restarts 0', async () => {
    const { js, nc } = await connectJs(nats);
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: 'TASKS', subjects: ['task.>'] });
    // AckWait far beyond the test: only the nak can bring the message back.
    await jsm.consumers.add('TASKS', {
      durable_name: 'agents',
      ack_policy: AckPolicy.Explicit,
      ack_wait: nanos(30_000),
    });
    const run = uniqueRun();
    await js.publish('task.agent', run);
    const consumer = await js.consumers.get('TASKS', 'agents');

    const first = (await consumer.next({ expires: 2_000 }))!;
    const d1 = await Journal.open(js, taskOf(run, { delivered: first.info.deliveryCount }));
    await d1.pause('ci', 200);
    const nakAt = performance.now();
    first.nak(200);

    const again = (await consumer.next({ expires: 5_000 }))!;
    expect(performance.now() - nakAt).toBeGreaterThanOrEqual(200);
    expect(again.info.deliveryCount).toBe(2);
    const d2 = await Journal.open(js, taskOf(run, { delivered: again.info.deliveryCount }));
    expect(d2.resume()).toEqual({ name: 'ci', ok: true });
    expect(d2.restarts()).toBe(0);
    expect(d2.pauseRemainingMs(Date.now())).toBe(0);
    expect((await read(js, run, STEP)).find((r) => r.type === 'pause')!.data).toEqual({
      name: 'ci',
      duration_ms: 200,
    });
    await again.ackAck();
  });

  it('a delivery that resumes early sees the time left, and pausing again for it keeps the pause resumable', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const d1 = await Journal.open(js, taskOf(run));
    const pauseSeq = await d1.pause('ci', 60_000);
    const pausedAt = Date.parse((await read(js, run, STEP)).find((r) => r.seq === pauseSeq)!.time);

    // A crash before the nak: AckWait redelivers long before the pause ends.
    const d2 = await Journal.open(js, taskOf(run, { delivered: 2 }));
    expect(d2.resume()).toEqual({ name: 'ci', ok: true });
    expect(d2.pauseRemainingMs(pausedAt + 1_000)).toBe(59_000);
    expect(d2.pauseRemainingMs(pausedAt + 61_000)).toBe(0);
    // A caller's clock an hour behind the server's does not stretch the pause past its length.
    expect(d2.pauseRemainingMs(pausedAt - 3_600_000)).toBe(60_000);
    await d2.pause('ci', d2.pauseRemainingMs(pausedAt + 1_000));

    const d3 = await Journal.open(js, taskOf(run, { delivered: 3 }));
    expect(d3.resume()).toEqual({ name: 'ci', ok: true });
    expect(d3.restarts()).toBe(0);
  });

  it('an input placed in iteration 0 is known, with its iteration and content, to iteration 2', async () => {
    const { js } = await connectJs(nats);
    const run = uniqueRun();
    const j0 = await Journal.open(js, taskOf(run));
    expect(j0.inputPlaced('r1')).toBe(false);
    await j0.placeInput({ requestId: 'r1', mode: 'queue', content: { text: 'also check the logs' } });
    expect(j0.inputPlaced('r1')).toBe(true);
    await j0.commit({ action: 'continue' });
    const j1 = await Journal.open(js, taskOf(run, { iteration: 1, streamSeq: 11 }));
    await j1.placeInput({ requestId: 'r2', mode: 'interrupt' });
    await j1.commit({ action: 'continue' });

    const j2 = await Journal.open(js, taskOf(run, { iteration: 2, streamSeq: 12 }));
    expect(j2.inputPlaced('r1')).toBe(true);
    expect(j2.inputPlaced('r3')).toBe(false);
    expect(j2.placedInputs()).toEqual([
      { requestId: 'r1', mode: 'queue', content: { text: 'also check the logs' }, iteration: 0 },
      { requestId: 'r2', mode: 'interrupt', iteration: 1 },
    ]);
    expect((await read(js, run, STEP)).find((r) => r.type === 'input.placed')!.data).toEqual({
      request_id: 'r1',
      mode: 'queue',
      content: { text: 'also check the logs' },
    });
  });

  it('placing one request twice throws, in the same iteration or a later one; an injected twin fails Check invariant 5', async () => {
    const { js, nc } = await connectJs(nats);
    const run = uniqueRun();
    const j0 = await Journal.open(js, taskOf(run));
    await j0.placeInput({ requestId: 'r1', mode: 'queue' });
    await expect(j0.placeInput({ requestId: 'r1', mode: 'queue' })).rejects.toThrow(/already placed/);
    await j0.commit({ action: 'continue' });
    const j1t = taskOf(run, { iteration: 1, streamSeq: 11 });
    const j1 = await Journal.open(js, j1t);
    await expect(j1.placeInput({ requestId: 'r1', mode: 'queue' })).rejects.toThrow(/already placed/);
    expect(await recordTypes(js, run)).toEqual(['claim', 'input.placed', 'commit', 'claim']);
    expect((await check(nc, run)).steps.flatMap((s) => s.violations)).toEqual([]);

    // A writer that skipped the check: the same request placed again.
    await rawPublish(js, j1t, 'input.placed', { request_id: 'r1', mode: 'queue' }, 1, j1.seq());
    const violations = (await check(nc, run)).steps.flatMap((s) => s.violations);
    expect(violations.some((v) => v.startsWith('invariant 5'))).toBe(true);
  });
});
