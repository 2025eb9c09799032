import { describe, expect, it } from 'vitest';
import { type Goal, runScenario } from '../../bench/lib/harness.js';
import { standingText } from '../../bench/lib/report.js';
import { medianInterval, orderStatisticCoverage, verdict } from '../../bench/lib/verdict.js';

const atLeast = (value: number): Goal => ({ op: '>=', value });
const atMost = (value: number): Goal => ({ op: '<=', value });

/** A seeded generator (mulberry32), so the coverage check draws the same samples every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('the median interval of a goal’s rounds', () => {
  it('covers the median with the binomial probability of its order statistics', () => {
    expect(orderStatisticCoverage(5, 1)).toBe(0.9375);
    expect(orderStatisticCoverage(7, 1)).toBe(0.984375);
    expect(orderStatisticCoverage(7, 2)).toBe(0.875);
    expect(orderStatisticCoverage(9, 2)).toBe(0.9609375);
    expect(orderStatisticCoverage(25, 8)).toBeCloseTo(0.95671475, 7);
  });

  it('is the narrowest pair reaching 90 %: none under 5 rounds, the extremes at 5 and 7, the second of each at 9', () => {
    expect(medianInterval([3, 1, 2, 4])).toBeNull();
    expect(medianInterval([5, 1, 4, 2, 3])).toEqual({ low: 1, high: 5, coverage: 0.9375 });
    expect(medianInterval([7, 1, 6, 2, 5, 3, 4])).toMatchObject({ low: 1, high: 7 });
    expect(medianInterval([9, 1, 8, 2, 7, 3, 6, 4, 5])).toEqual({ low: 2, high: 8, coverage: 0.9609375 });
    const rounds25 = Array.from({ length: 25 }, (_, i) => 25 - i);
    expect(medianInterval(rounds25)).toMatchObject({ low: 8, high: 18 });
  });

  it('holds the true median of a skewed distribution about as often as its coverage says', () => {
    // Exponential rounds (median ln 2): 4,000 runs of 7 and of 9 rounds each.
    const random = seeded(20261204);
    for (const n of [7, 9]) {
      let held = 0;
      let coverage = 0;
      const runs = 4_000;
      for (let run = 0; run < runs; run++) {
        const rounds = Array.from({ length: n }, () => -Math.log(1 - random()));
        const interval = medianInterval(rounds)!;
        coverage = interval.coverage;
        if (interval.low <= Math.LN2 && Math.LN2 <= interval.high) held++;
      }
      expect(Math.abs(held / runs - coverage)).toBeLessThan(0.015);
    }
  });
});

describe('a goal’s verdict from its interval', () => {
  const interval = (low: number, high: number) => ({ low, high, coverage: 0.94 });

  it('is met or short only when the whole interval is on that side of the goal, in either direction', () => {
    expect(verdict(atLeast(2), interval(2, 2.4))).toBe('met');
    expect(verdict(atLeast(2), interval(1.5, 1.99))).toBe('short');
    expect(verdict(atLeast(2), interval(1.8, 2.3))).toBe('undecided');
    expect(verdict(atMost(1), interval(0.6, 0.9))).toBe('met');
    expect(verdict(atMost(1), interval(1.1, 1.3))).toBe('short');
    expect(verdict(atMost(1), interval(0.8, 1.2))).toBe('undecided');
  });

  it('is not given without an interval (too few rounds), whatever the median', () => {
    expect(verdict(atLeast(2), null)).toBeNull();
  });

  it('reads as the median’s pass or short, and says so when the rounds cannot tell', () => {
    expect(standingText({})).toBe('');
    expect(standingText({ met: true })).toBe('pass');
    expect(standingText({ met: true, verdict: 'met', interval: interval(2, 3) })).toBe('pass');
    expect(standingText({ met: false, verdict: 'short', interval: interval(1, 1.5) })).toBe('short');
    expect(standingText({ met: false, verdict: 'undecided', interval: interval(1.7, 2.2) })).toBe(
      'short by the median; the rounds cannot tell',
    );
    expect(standingText({ met: true, verdict: null, interval: null })).toBe(
      'pass by the median; too few rounds to judge',
    );
  });
});

describe('runScenario', () => {
  it('gives each goal ratio and metric goal its median, interval and verdict from the same rounds', async () => {
    // Round r: the subject runs at 10 + r items/s against an anchor at 5, so the ratio's rounds
    // are 2.0, 2.2, …, 2.8 and its p50 r ms.
    const result = await runScenario(
      {
        name: 'fixed',
        description: 'fixed figures',
        rounds: 5,
        subjects: {
          subject: async (round) => ({ items_per_s: 10 + round, p50_ms: round }),
          anchor: async () => ({ items_per_s: 5 }),
        },
        ratios: [
          {
            name: 'met',
            numerator: 'subject',
            denominator: 'anchor',
            metric: 'items_per_s',
            goal: atLeast(2),
          },
          {
            name: 'open',
            numerator: 'subject',
            denominator: 'anchor',
            metric: 'items_per_s',
            goal: atLeast(2.3),
          },
          { name: 'plain', numerator: 'subject', denominator: 'anchor', metric: 'items_per_s' },
        ],
        goals: [{ subject: 'subject', metric: 'p50_ms', goal: atMost(5) }],
      },
      { databaseUrl: '', smoke: false, log: () => {} },
    );
    const [met, open, plain] = result.ratios;
    expect(met).toMatchObject({ median: 2.4, met: true, verdict: 'met', interval: { low: 2, high: 2.8 } });
    expect(open).toMatchObject({ median: 2.4, met: true, verdict: 'undecided' });
    expect(plain).not.toHaveProperty('verdict');
    expect(result.goals[0]).toMatchObject({
      median: 2,
      met: true,
      verdict: 'met',
      interval: { low: 0, high: 4 },
    });
  });

  it('runs the rounds the context asks for instead of the scenario’s own, except in smoke mode', async () => {
    const runs = async (ctx: { smoke: boolean; rounds?: number }) => {
      let calls = 0;
      await runScenario(
        {
          name: 'count',
          description: 'counts rounds',
          rounds: 5,
          subjects: { a: async () => ({ x: ++calls }) },
        },
        { databaseUrl: '', log: () => {}, ...ctx },
      );
      return calls;
    };
    expect(await runs({ smoke: false })).toBe(5);
    expect(await runs({ smoke: false, rounds: 11 })).toBe(11);
    expect(await runs({ smoke: true, rounds: 11 })).toBe(1);
  });
});
