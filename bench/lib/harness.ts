/**
 * The benchmark harness: every scenario measures its subjects interleaved (A B C, A B C, …),
 * so a machine that speeds up or slows down mid-run moves all of them alike, and every ratio
 * is taken between a subject and its anchor of the *same* round before the median is taken.
 *
 * Glossary:
 * - **scenario**: one workload (`claim_c8`), measured on several subjects.
 * - **subject**: one implementation of the workload (`leasehold`, `pgbench`, `graphile`, …);
 *   a run returns one or more named metrics (`items_per_s`, `p50_ms`, …).
 * - **ratio**: subject ÷ anchor of one metric within a scenario, per round, then summarised.
 * - **goal**: a bound a ratio or a metric should meet; reported, never fatal: by the median
 *   (`met`) and by an interval for it (`verdict`: met, short, or undecided while the rounds
 *   spread across the goal; see `verdict.ts`).
 */
import { type MedianInterval, medianInterval, meets, type Verdict, verdict } from './verdict.js';

export interface BenchContext {
  /** A connection string to the bench database (migrated for Leasehold; anchors add their schemas). */
  databaseUrl: string;
  /** Smoke mode: one round, small sizes — it must complete, not meet goals. */
  smoke: boolean;
  /**
   * Rounds for every scenario instead of its own (`--rounds`): more of them narrow a goal's
   * interval until it lies on one side of the goal. Ignored in smoke mode.
   */
  rounds?: number;
  /** Progress lines (stderr). */
  log(message: string): void;
}

export type Metrics = Record<string, number>;

export interface Goal {
  op: '>=' | '<=';
  value: number;
}

export interface RatioSpec {
  /** The name in latest.json (`claim_c8_vs_pgbench`). */
  name: string;
  numerator: string;
  denominator: string;
  metric: string;
  goal?: Goal;
}

export interface MetricGoal {
  subject: string;
  metric: string;
  goal: Goal;
}

export interface Scenario {
  name: string;
  /** One line for the table: what was measured. */
  description: string;
  /** Subjects in the order they run within a round; each call is one measurement. */
  subjects: Record<string, (round: number) => Promise<Metrics>>;
  ratios?: RatioSpec[];
  goals?: MetricGoal[];
  /** Rounds (default 3; smoke runs 1). */
  rounds?: number;
  /**
   * Subjects measured in the first round only (n = 1): counts of statements and connections
   * over an idle window, which come out the same round after round, where a rate does not;
   * and slow anchors kept for context, whose ratios carry no goal (pg-boss). Repeating them
   * would only lengthen the run.
   */
  once?: readonly string[];
  /**
   * Reverse the subjects' order every other round (A B, B A, A B, …). For short rounds of two
   * subjects, where whatever the one before leaves behind (its garbage, the server's flushes)
   * lands in the next one's window: with the order fixed, that always fell on the same subject.
   */
  alternate?: boolean;
  /** Runs once before the first round / after the last (servers, schemas). */
  setup?(): Promise<void>;
  teardown?(): Promise<void>;
}

export interface Summary {
  median: number;
  min: number;
  max: number;
  n: number;
}

export interface ScenarioResult extends Summary {
  name: string;
  subject: string;
  metric: string;
}

/** A goal's standing: by its median, and by the rounds (null: too few of them for an interval). */
export interface GoalStanding {
  met: boolean;
  interval: MedianInterval | null;
  verdict: Verdict | null;
}

export interface RatioResult extends Summary, Partial<GoalStanding> {
  name: string;
  numerator: string;
  denominator: string;
  metric: string;
  goal?: Goal;
}

export interface MetricGoalResult extends MetricGoal, GoalStanding {
  scenario: string;
  median: number;
}

export interface Results {
  scenarios: ScenarioResult[];
  ratios: RatioResult[];
  goals: MetricGoalResult[];
}

export function summarise(values: number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { median, min: sorted[0]!, max: sorted[sorted.length - 1]!, n: sorted.length };
}

/** How `values` (one per round, their median already taken) stand against `goal`. */
function standing(goal: Goal, values: readonly number[], median: number): GoalStanding {
  const interval = medianInterval(values);
  return { met: meets(goal, median), interval, verdict: verdict(goal, interval) };
}

/** Runs a scenario's rounds and folds them into results. */
export async function runScenario(scenario: Scenario, ctx: BenchContext): Promise<Results> {
  const rounds = ctx.smoke ? 1 : (ctx.rounds ?? scenario.rounds ?? 3);
  const perRound: Array<Record<string, Metrics>> = [];
  await scenario.setup?.();
  try {
    for (let round = 0; round < rounds; round++) {
      const measured: Record<string, Metrics> = {};
      const order = Object.entries(scenario.subjects);
      if (scenario.alternate && round % 2 === 1) order.reverse();
      for (const [subject, run] of order) {
        if (round > 0 && scenario.once?.includes(subject)) continue;
        const started = performance.now();
        measured[subject] = await run(round);
        const took = ((performance.now() - started) / 1000).toFixed(1);
        ctx.log(
          `${scenario.name} round ${round + 1}/${rounds} ${subject}: ${formatMetrics(measured[subject]!)} (${took} s)`,
        );
      }
      perRound.push(measured);
    }
  } finally {
    await scenario.teardown?.();
  }
  return fold(scenario, perRound);
}

function fold(scenario: Scenario, perRound: Array<Record<string, Metrics>>): Results {
  const scenarios: ScenarioResult[] = [];
  for (const subject of Object.keys(scenario.subjects)) {
    const metrics = new Set(perRound.flatMap((r) => Object.keys(r[subject] ?? {})));
    for (const metric of metrics) {
      const values = roundValues(perRound, subject, metric);
      if (values.length) scenarios.push({ name: scenario.name, subject, metric, ...summarise(values) });
    }
  }
  const ratios: RatioResult[] = (scenario.ratios ?? []).flatMap((spec) => {
    const values = perRound
      .map(
        (r) =>
          (r[spec.numerator]?.[spec.metric] ?? Number.NaN) /
          (r[spec.denominator]?.[spec.metric] ?? Number.NaN),
      )
      .filter(Number.isFinite);
    if (!values.length) return [];
    const summary = summarise(values);
    return [{ ...spec, ...summary, ...(spec.goal ? standing(spec.goal, values, summary.median) : {}) }];
  });
  const goals: MetricGoalResult[] = (scenario.goals ?? []).flatMap((g) => {
    const found = scenarios.find((s) => s.subject === g.subject && s.metric === g.metric);
    if (!found) return [];
    const values = roundValues(perRound, g.subject, g.metric);
    return [
      { ...g, scenario: scenario.name, median: found.median, ...standing(g.goal, values, found.median) },
    ];
  });
  return { scenarios, ratios, goals };
}

/** One subject's figures for `metric`, a round each (rounds it did not run left out). */
function roundValues(perRound: Array<Record<string, Metrics>>, subject: string, metric: string): number[] {
  return perRound.map((r) => r[subject]?.[metric]).filter((v): v is number => Number.isFinite(v));
}

export function formatMetrics(metrics: Metrics): string {
  return Object.entries(metrics)
    .map(([k, v]) => `${k}=${formatNumber(v)}`)
    .join(' ');
}

export function formatNumber(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  const abs = Math.abs(v);
  if (abs >= 1000) return Math.round(v).toLocaleString('en-US');
  if (abs >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

/** Percentile by nearest rank over an unsorted sample. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

/** Runs `workers` async loops until `shouldStop()`; resolves when all are done. */
export async function concurrently(workers: number, loop: (worker: number) => Promise<void>): Promise<void> {
  await Promise.all(Array.from({ length: workers }, (_, i) => loop(i)));
}
