/**
 * Prints the fault suite's summary table after a run — test, load, faults injected, result —
 * from the rows the tests record (`recordFault`). A full-scale run also merges its rows into
 * `test/faults/RESULTS.md` (linked from the README): a row per test, replaced when that test
 * runs again, so re-running one file at full scale updates its rows and keeps the others.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Reporter, TestModule } from 'vitest/node';

const RESULTS = path.join(path.dirname(fileURLToPath(import.meta.url)), 'RESULTS.md');
const HEADER = ['| test | load | faults injected | result | run (UTC) |', '|---|---|---|---|---|'];

export default class FaultSummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const stamp = new Date().toISOString().slice(0, 16).replace('T', ' ');
    const rows: string[][] = [];
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const row = test.meta().fault;
        if (!row) continue;
        const state = test.result().state;
        const verdict = state === 'passed' ? 'pass' : state === 'failed' ? '**FAIL**' : state;
        rows.push([test.fullName, row.load, row.faults, `${verdict}: ${row.result}`, stamp]);
      }
    }
    if (rows.length === 0) return;
    const full = process.env.LEASEHOLD_FAULTS === 'full';
    const lines = rows.map(line);
    process.stdout.write(
      `\nFault suite (${full ? 'full' : 'fast'} scale)\n\n${[...HEADER, ...lines].join('\n')}\n\n`,
    );
    if (full) writeFileSync(RESULTS, document(merge(previousRows(), rows)));
  }
}

function line(cells: string[]): string {
  return `| ${cells.map((cell) => cell.replaceAll('|', '\\|').replaceAll('\n', ' ')).join(' | ')} |`;
}

/** The rows of the committed table, keyed by test name (the first cell). */
function previousRows(): Map<string, string> {
  const rows = new Map<string, string>();
  if (!existsSync(RESULTS)) return rows;
  for (const text of readFileSync(RESULTS, 'utf8').split('\n')) {
    if (!text.startsWith('| ') || HEADER.includes(text)) continue;
    const name = text.slice(2, text.indexOf(' | '));
    if (name !== 'test') rows.set(name, text);
  }
  return rows;
}

function merge(previous: Map<string, string>, fresh: string[][]): string[] {
  for (const row of fresh) previous.set(row[0]!.replaceAll('|', '\\|'), line(row));
  return [...previous.keys()].sort().map((name) => previous.get(name)!);
}

function document(lines: string[]): string {
  return (
    '# Fault suite results\n\n' +
    'Rows from the latest full-scale run of each test (`npm run test:faults`, or one file with\n' +
    '`npm run test:faults -- test/faults/<file>`), on the 2-core machine the suite is written for.\n' +
    'Each row is one test; its pass criterion is asserted in the test itself.\n\n' +
    `${[...HEADER, ...lines].join('\n')}\n`
  );
}
