/** The bench's outputs: a Markdown table on stdout and the JSON file docs/benchmarks-latest.md is rendered from. */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { formatNumber, type Goal, type GoalStanding, type Results } from './harness.js';
import { MEDIAN_CONFIDENCE } from './verdict.js';

export interface Report extends Results {
  /** When and where the figures were taken; absolute figures only mean something beside these. */
  machine: { date: string; node: string; cpus: number; cpuModel: string; postgres: string; smoke: boolean };
  /** Scenario descriptions, by name. */
  descriptions: Record<string, string>;
}

const goalText = (g?: Goal) => (g ? `${g.op} ${g.value}` : '');

/**
 * A goal's two readings in words: the median's pass or short, then what the rounds say when
 * they say otherwise. Reports written before the rounds were judged carry only `met`.
 */
export function standingText(s: Partial<GoalStanding>): string {
  if (s.met === undefined) return '';
  const byMedian = s.met ? 'pass' : 'short';
  // The median lies inside its interval, so a decided verdict always agrees with it.
  if (s.verdict === undefined || s.verdict === 'met' || s.verdict === 'short') return byMedian;
  return `${byMedian} by the median; ${s.verdict === null ? 'too few rounds to judge' : 'the rounds cannot tell'}`;
}

const intervalText = (s: Partial<GoalStanding>, format: (v: number) => string) =>
  s.interval ? `${format(s.interval.low)}–${format(s.interval.high)}` : '';

export function markdown(report: Report): string {
  const lines: string[] = [];
  lines.push(
    `| ratio | median | min | max | median's interval (≥ ${MEDIAN_CONFIDENCE * 100} %) | goal | |`,
    '|---|---:|---:|---:|---:|---|---|',
  );
  const fixed2 = (v: number) => v.toFixed(2);
  for (const r of report.ratios) {
    lines.push(
      `| \`${r.name}\` | ${fixed2(r.median)} | ${fixed2(r.min)} | ${fixed2(r.max)} | ${intervalText(r, fixed2)} | ${goalText(r.goal)} | ${standingText(r)} |`,
    );
  }
  for (const g of report.goals) {
    lines.push(
      `| \`${g.scenario}\` ${g.subject} ${g.metric} | ${formatNumber(g.median)} | | | ${intervalText(g, formatNumber)} | ${goalText(g.goal)} | ${standingText(g)} |`,
    );
  }
  lines.push(
    '',
    '| scenario | subject | metric | median | min | max | n |',
    '|---|---|---|---:|---:|---:|---:|',
  );
  for (const s of report.scenarios) {
    lines.push(
      `| ${s.name} | ${s.subject} | ${s.metric} | ${formatNumber(s.median)} | ${formatNumber(s.min)} | ${formatNumber(s.max)} | ${s.n} |`,
    );
  }
  const m = report.machine;
  lines.push(
    '',
    `${m.date}; Node ${m.node}; ${m.cpus} × ${m.cpuModel}; PostgreSQL ${m.postgres}${m.smoke ? '; smoke run (1 round, small sizes)' : ''}.`,
  );
  return lines.join('\n');
}

export async function writeReport(file: string, report: Report): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, `${JSON.stringify(report, null, 2)}\n`);
}

/** Where a full run's figures are published in the repository's docs. */
export const RESULTS_PAGE = path.resolve(import.meta.dirname, '../../docs/benchmarks-latest.md');

/**
 * docs/benchmarks-latest.md: the latest full run's tables with each scenario's description,
 * rendered from bench/results/latest.json (never edited by hand; a test compares the two).
 */
export function resultsPage(report: Report): string {
  const lines = [
    '# Benchmark results: the latest full run',
    '',
    '<!-- Generated from bench/results/latest.json by `npm run bench` (or `npm run bench:page`). Do not edit. -->',
    '',
    'How these figures are taken, and how to read them: [benchmarks.md](benchmarks.md).',
    '',
    '## Scenarios',
    '',
    ...Object.entries(report.descriptions).map(([name, text]) => `- \`${name}\`: ${text}`),
    '',
    '## Ratios and figures',
    '',
    markdown(report),
    '',
  ];
  return lines.join('\n');
}
