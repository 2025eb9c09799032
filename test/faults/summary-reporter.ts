/**
 * Prints the fault suite's summary table after a run — test, load, faults injected, result —
 * from the rows the tests record (`recordFault`), and writes it to `test/faults/RESULTS.md`
 * (linked from the README) when the run was the full one.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Reporter, TestModule } from 'vitest/node';

const RESULTS = path.join(path.dirname(fileURLToPath(import.meta.url)), 'RESULTS.md');

export default class FaultSummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const rows: string[][] = [];
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const row = test.meta().fault;
        if (!row) continue;
        const state = test.result().state;
        const verdict = state === 'passed' ? 'pass' : state === 'failed' ? '**FAIL**' : state;
        rows.push([test.fullName, row.load, row.faults, `${verdict}: ${row.result}`]);
      }
    }
    if (rows.length === 0) return;
    const scale = process.env.LEASEHOLD_FAULTS === 'full' ? 'full' : 'fast';
    const table = [
      '| test | load | faults injected | result |',
      '|---|---|---|---|',
      ...rows.map((r) => `| ${r.map((cell) => cell.replaceAll('|', '\\|')).join(' | ')} |`),
    ].join('\n');
    process.stdout.write(`\nFault suite (${scale} scale)\n\n${table}\n\n`);
    if (scale === 'full') {
      const stamp = new Date().toISOString().slice(0, 16).replace('T', ' ');
      writeFileSync(
        RESULTS,
        `# Fault suite results\n\nThe last full run of \`npm run test:faults\` (${stamp} UTC, 2-core machine).\n` +
          `Each row is one test; its pass criterion is asserted in the test itself.\n\n${table}\n`,
      );
    }
  }
}
