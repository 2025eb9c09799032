import { describe, expect, it } from 'vitest';
import { Fold, type FoldOps } from '../../src/db/fold.js';
import { ManualClock } from '../helpers/manual-clock.js';

/**
 * An operation over an in-memory table of counters whose statements the test releases by hand,
 * so it decides what is in flight when each call arrives. `one` bumps a key or fails on a
 * missing one; `many` bumps the keys it knows and leaves the rest unanswered.
 */
class Ledger implements FoldOps<string, number> {
  values = new Map<string, number>();
  sent: string[][] = [];
  #gates: Array<() => void> = [];
  failMany = false;
  /** What a failing `many` throws. */
  manyError: Error = new Error('statement refused');
  /** Keys `many` leaves unanswered though `one` can write them (a precondition only `one` re-reads). */
  skipInMany = new Set<string>();

  key(input: string): string {
    return input;
  }

  async one(input: string): Promise<number> {
    this.sent.push([input]);
    await this.#gate();
    return this.#bump(input);
  }

  async many(inputs: string[]): Promise<Map<string, number>> {
    this.sent.push(inputs);
    await this.#gate();
    if (this.failMany) throw this.manyError;
    const out = new Map<string, number>();
    for (const k of inputs) if (this.values.has(k) && !this.skipInMany.has(k)) out.set(k, this.#bump(k));
    return out;
  }

  #bump(k: string): number {
    const v = this.values.get(k);
    if (v === undefined) throw new Error(`no ${k}`);
    this.values.set(k, v + 1);
    return v + 1;
  }

  #gate(): Promise<void> {
    return new Promise((resolve) => this.#gates.push(resolve));
  }

  /** Lets every statement sent so far finish, then lets their callers run. */
  async release(): Promise<void> {
    const open = this.#gates.splice(0);
    for (const go of open) go();
    for (let i = 0; i < 10; i++) await Promise.resolve();
  }
}

function ledger(...keys: string[]): Ledger {
  const l = new Ledger();
  for (const k of keys) l.values.set(k, 0);
  return l;
}

describe('Fold', () => {
  it('sends a call that finds nothing in flight at once and alone', async () => {
    const l = ledger('a');
    const fold = new Fold(l);
    const a = fold.run('a');
    expect(l.sent).toEqual([['a']]);
    await l.release();
    expect(await a).toBe(1);
  });

  it('carries the calls that arrive while a statement is in flight in the next one, each answered with its own result', async () => {
    const l = ledger('a', 'b', 'c', 'd');
    const fold = new Fold(l);
    const first = fold.run('a');
    const rest = ['b', 'c', 'd'].map((k) => fold.run(k));
    expect(l.sent).toEqual([['a']]);
    await l.release();
    expect(l.sent).toEqual([['a'], ['b', 'c', 'd']]);
    await l.release();
    expect(await first).toBe(1);
    expect(await Promise.all(rest)).toEqual([1, 1, 1]);
    expect({ statements: fold.statements, calls: fold.calls, alone: fold.alone }).toEqual({
      statements: 2,
      calls: 4,
      alone: 0,
    });
  });

  it('never puts two calls of one key in a statement: the second waits for the next and sees the first one done', async () => {
    const l = ledger('a', 'b');
    const fold = new Fold(l);
    const first = fold.run('b');
    const waiting = [fold.run('a'), fold.run('a'), fold.run('b'), fold.run('a')];
    await l.release();
    expect(l.sent[1]).toEqual(['a', 'b']);
    await l.release();
    expect(l.sent[2]).toEqual(['a']);
    await l.release();
    expect(l.sent[3]).toEqual(['a']);
    await l.release();
    expect(await first).toBe(1);
    // Each call of a key saw the one before it: a ran 1, 2, 3 and b 1, 2, in arrival order.
    expect(await Promise.all(waiting)).toEqual([1, 2, 2, 3]);
  });

  it('runs a call the statement did not settle on its own, and its failure reaches only its caller', async () => {
    const l = ledger('a', 'b', 'c');
    const fold = new Fold(l);
    const first = fold.run('a');
    const b = fold.run('b');
    const missing = fold.run('x');
    const c = fold.run('c');
    await l.release();
    await l.release(); // the batch [b, x, c]
    await l.release(); // x alone
    expect(l.sent).toEqual([['a'], ['b', 'x', 'c'], ['x']]);
    await expect(missing).rejects.toThrow('no x');
    expect([await first, await b, await c]).toEqual([1, 1, 1]);
    expect(fold.alone).toBe(1);
  });

  it('answers every call of a statement that failed as a whole on its own, as if it had come alone', async () => {
    const l = ledger('a', 'b', 'c');
    const fold = new Fold(l);
    const first = fold.run('a');
    const calls = [fold.run('b'), fold.run('x'), fold.run('c')];
    l.failMany = true;
    await l.release();
    await l.release(); // the batch fails
    await l.release(); // b, x and c alone
    expect(l.sent.slice(2).sort()).toEqual([['b'], ['c'], ['x']]);
    const settled = await Promise.allSettled(calls);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(await first).toBe(1);
    expect(l.values).toEqual(
      new Map([
        ['a', 1],
        ['b', 1],
        ['c', 1],
      ]),
    );
  });

  it('sends the next statement before the callers of the last one run, so the database is not kept waiting on them', async () => {
    const l = ledger('a', 'b');
    const fold = new Fold(l);
    const sentWhenAAnswered = fold.run('a').then(() => l.sent.map((s) => [...s]));
    const b = fold.run('b');
    await l.release();
    expect(await sentWhenAAnswered).toEqual([['a'], ['b']]);
    await l.release();
    expect(await b).toBe(1);
  });

  it('keeps a call re-run alone in flight: a later call of its key waits for it', async () => {
    const l = ledger('a', 'b', 'c');
    l.skipInMany.add('b');
    const fold = new Fold(l);
    const first = fold.run('a');
    const batch = [fold.run('b'), fold.run('c')];
    await l.release(); // a
    await l.release(); // [b, c]: b unanswered, re-run alone
    const later = fold.run('b');
    expect(l.sent).toEqual([['a'], ['b', 'c'], ['b']]);
    await l.release(); // b alone
    expect(l.sent.at(-1)).toEqual(['b']);
    await l.release(); // the later b, after it
    expect([await first, ...(await Promise.all(batch)), await later]).toEqual([1, 1, 1, 2]);
    expect(l.sent).toEqual([['a'], ['b', 'c'], ['b'], ['b']]);
  });

  it('sends at most `max` calls a statement, oldest first; the rest go in the next', async () => {
    const keys = Array.from({ length: 7 }, (_, i) => `k${i}`);
    const l = ledger('first', ...keys);
    const fold = new Fold(l, { max: 3 });
    const all = [fold.run('first'), ...keys.map((k) => fold.run(k))];
    for (let i = 0; i < 4; i++) await l.release();
    expect(l.sent).toEqual([['first'], ['k0', 'k1', 'k2'], ['k3', 'k4', 'k5'], ['k6']]);
    expect(await Promise.all(all)).toEqual(Array(8).fill(1));
  });

  it('goes idle when drained: the next lone call is sent at once again', async () => {
    const l = ledger('a', 'b');
    const fold = new Fold(l);
    const a = fold.run('a');
    await l.release();
    await a;
    const b = fold.run('b');
    expect(l.sent).toEqual([['a'], ['b']]);
    await l.release();
    expect(await b).toBe(1);
  });

  describe('with a statement that does not come back', () => {
    it('holds back the calls behind it for stallMs at most: then they go in a statement of their own', async () => {
      const clock = new ManualClock();
      const l = ledger('stuck', 'b', 'c', 'd');
      const fold = new Fold(l, { stallMs: 50, clock });
      const stuck = fold.run('stuck');
      const behind = [fold.run('b'), fold.run('c')];
      await clock.advance(49);
      expect(l.sent).toEqual([['stuck']]);
      await clock.advance(1);
      expect(l.sent).toEqual([['stuck'], ['b', 'c']]);
      // The newer statement is not stalled yet: a call now waits for one of the two.
      const d = fold.run('d');
      expect(l.sent).toHaveLength(2);
      await l.release();
      expect([await stuck, ...(await Promise.all(behind))]).toEqual([1, 1, 1]);
      expect(l.sent).toEqual([['stuck'], ['b', 'c'], ['d']]);
      await l.release();
      expect(await d).toBe(1);
    });

    it('sends nothing early while statements come back within stallMs', async () => {
      const clock = new ManualClock();
      const l = ledger('a', 'b', 'c');
      const fold = new Fold(l, { stallMs: 50, clock });
      const a = fold.run('a');
      const b = fold.run('b');
      await clock.advance(30);
      await l.release(); // a, then b goes
      const c = fold.run('c');
      await clock.advance(30); // 60 ms since a went, 30 since b
      expect(l.sent).toEqual([['a'], ['b']]);
      await l.release();
      await l.release();
      expect(await Promise.all([a, b, c])).toEqual([1, 1, 1]);
      expect(l.sent).toEqual([['a'], ['b'], ['c']]);
    });
  });

  it('fails every call of a statement the database could not be reached for with its error, none re-run alone', async () => {
    const l = ledger('a', 'b', 'c');
    l.failMany = true;
    l.manyError = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const fold = new Fold(l);
    const first = fold.run('a');
    const batch = [fold.run('b'), fold.run('c')];
    await l.release();
    await l.release();
    expect(await first).toBe(1);
    for (const r of await Promise.allSettled(batch)) {
      expect((r as PromiseRejectedResult).reason).toBe(l.manyError);
    }
    expect(fold.alone).toBe(0);
    expect(l.sent).toEqual([['a'], ['b', 'c']]);
  });
});
