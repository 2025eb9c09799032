import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { RESULTS_PAGE, type Report, resultsPage } from '../../bench/lib/report.js';

describe('the published benchmark page', () => {
  it('docs/benchmarks-latest.md is what bench/results/latest.json renders to, not hand-edited', () => {
    const latest = path.resolve(import.meta.dirname, '../../bench/results/latest.json');
    const report = JSON.parse(readFileSync(latest, 'utf8')) as Report;
    expect(readFileSync(RESULTS_PAGE, 'utf8') === resultsPage(report), 'run npm run bench:page').toBe(true);
  });
});
