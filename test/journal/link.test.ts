/**
 * The link watch on a real connection: who is told when it drops. Every read holds a waiter
 * while its answer is out and lets go when it comes, so the list must notify exactly the
 * waiters still held, once each, whatever order they came and went in.
 */
import { describe, expect, it } from 'vitest';
import { LinkDownError, linkUp, onLinkDown, untilLinkDown } from '../../src/journal/link.js';
import { useNatsServer } from '../helpers/nats.js';

describe('the link watch', () => {
  const nats = useNatsServer();

  it('a drop notifies every waiter still held exactly once, and none that was released before it', async () => {
    const nc = await nats.connect();
    expect(linkUp(nc)).toBe(true);
    const told = new Array<number>(60).fill(0);
    const cancels = told.map((_, i) =>
      onLinkDown(nc, () => {
        told[i]! += 1;
      }),
    );
    // Released from the head, the tail, the middle, and twice over: every way off the list.
    const released = [59, 0, 30, 31, 1, 58, ...Array.from({ length: 10 }, (_, k) => 5 + 2 * k)];
    for (const i of released) cancels[i]!();
    cancels[30]!();

    await nc.close();
    await expect.poll(() => linkUp(nc)).toBe(false);
    for (const [i, n] of told.entries()) expect(n, `waiter ${i}`).toBe(released.includes(i) ? 0 : 1);
    // Cancelling after the drop told it changes nothing.
    for (const cancel of cancels) cancel();
    expect(told.reduce((a, b) => a + b)).toBe(60 - released.length);
  });

  it('a waiter released while the drop is telling the others is not told', async () => {
    const nc = await nats.connect();
    const told: string[] = [];
    // Each lets go of the other when told: whichever the drop tells first, the other is not.
    const cancels: Array<() => void> = [];
    cancels.push(
      onLinkDown(nc, () => {
        told.push('a');
        cancels[1]!();
      }),
      onLinkDown(nc, () => {
        told.push('b');
        cancels[0]!();
      }),
    );
    await nc.close();
    await expect.poll(() => linkUp(nc)).toBe(false);
    expect(told).toHaveLength(1);
  });

  it('a wait whose answer came is not failed by a later drop; one still waiting fails with LinkDownError', async () => {
    const nc = await nats.connect();
    const answered = await Promise.all(
      Array.from({ length: 20 }, (_, i) => untilLinkDown(nc, Promise.resolve(i))),
    );
    expect(answered).toEqual(Array.from({ length: 20 }, (_, i) => i));
    const refused = untilLinkDown(nc, Promise.reject(new Error('refused')));
    await expect(refused).rejects.toThrow('refused');

    // Answers that never come: only the drop ends these waits.
    const waiting = Array.from({ length: 8 }, () => untilLinkDown(nc, new Promise<never>(() => {})));
    const settled = Promise.allSettled(waiting);
    await nc.close();
    for (const outcome of await settled) {
      expect(outcome.status).toBe('rejected');
      expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(LinkDownError);
    }
  });
});
