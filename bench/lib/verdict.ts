/**
 * Whether a goal is met, judged by the rounds rather than by their median alone.
 *
 * A median of a few rounds moves with the machine: on these shared machines a ratio's rounds
 * often spread wider than its distance to the goal, and a run then says "pass" or "short" by
 * luck. So each goal also gets an interval for the median and a verdict from it: the goal is
 * met (or short) only when the whole interval is on that side of it, and otherwise the rounds
 * cannot tell (`undecided`), however the median happened to fall.
 *
 * The interval is distribution-free: whatever the rounds' distribution, each round falls
 * above its true median with probability ½, so the count above is Binomial(n, ½) and the
 * order statistics [x₍ₖ₎, x₍ₙ₊₁₋ₖ₎] hold the median with probability 1 − 2·P(B ≤ k − 1). The
 * interval is the narrowest such pair whose coverage is at least `MEDIAN_CONFIDENCE`: with
 * 5 or 7 rounds that is the lowest round to the highest (94 % and 98 %), with 9 the second
 * lowest to the second highest (96 %); 4 rounds or fewer give no interval at 90 %.
 */
import type { Goal } from './harness.js';

/** The least coverage a median's interval is given at. */
export const MEDIAN_CONFIDENCE = 0.9;

export interface MedianInterval {
  low: number;
  high: number;
  /** The probability that the interval holds the median, by the binomial count above. */
  coverage: number;
}

/**
 * - `met`: the whole interval meets the goal.
 * - `short`: none of it does.
 * - `undecided`: the goal lies inside it.
 * A goal measured in too few rounds for an interval has no verdict (null): counts taken once
 * by design, or a scenario of three long rounds.
 */
export type Verdict = 'met' | 'short' | 'undecided';

export function meets(goal: Goal, value: number): boolean {
  return goal.op === '>=' ? value >= goal.value : value <= goal.value;
}

/** The probability that [x₍ₖ₎, x₍ₙ₊₁₋ₖ₎] of `n` rounds holds their median (k ≥ 1, 2k ≤ n + 1). */
export function orderStatisticCoverage(n: number, k: number): number {
  // P(B ≤ k − 1) for B ~ Binomial(n, ½), summed in exact integers up to n = 52.
  let below = 0;
  let choose = 1;
  for (let i = 0; i < k; i++) {
    below += choose;
    choose = (choose * (n - i)) / (i + 1);
  }
  return Math.max(0, 1 - (2 * below) / 2 ** n);
}

/** The narrowest order-statistic interval for the median at `confidence`; null when none reaches it. */
export function medianInterval(
  values: readonly number[],
  confidence = MEDIAN_CONFIDENCE,
): MedianInterval | null {
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  let best: MedianInterval | null = null;
  for (let k = 1; 2 * k <= n + 1; k++) {
    const coverage = orderStatisticCoverage(n, k);
    if (coverage < confidence) break;
    best = { low: sorted[k - 1]!, high: sorted[n - k]!, coverage };
  }
  return best;
}

export function verdict(goal: Goal, interval: MedianInterval | null): Verdict | null {
  if (interval === null) return null;
  const low = meets(goal, interval.low);
  const high = meets(goal, interval.high);
  if (low && high) return 'met';
  if (!low && !high) return 'short';
  return 'undecided';
}
