/** The bench's outputs: a Markdown table on stdout and the JSON file docs/benchmarks-latest.md is rendered from. */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { formatNumber, type Goal, type Results } from './harness.js';

export interface Report extends Results {
  /** When and where the figures were taken; absolute figures only mean something beside these. */
  machine: { date: string; node: string; cpus: number; cpuModel: string; postgres: string; smoke: boolean };
  /** Scenario descriptions, by name. */
  descriptions: Record<string, string>;
}

const goalText = (g?: Goal) => (g ? `${g.op} ${g.value}` : '');
const verdict = (met?: boolean) => (met === undefined ? '' : met ? 'pass' : 'short');

export function markdown(report: Report): string {
  const lines: string[] = [];
  lines.push('| ratio | median | min | max | goal | |', '|---|---:|---:|---:|---|---|');
  for (const r of report.ratios) {
    lines.push(
      `| \`${r.name}\` | ${r.median.toFixed(2)} | ${r.min.toFixed(2)} | ${r.max.toFixed(2)} | ${goalText(r.goal)} | ${verdict(r.met)} |`,
    );
  }
  for (const g of report.goals) {
    lines.push(
      `| \`${g.scenario}\` ${g.subject} ${g.metric} | ${formatNumber(g.median)} | | | ${goalText(g.goal)} | ${verdict(g.met)} |`,
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
