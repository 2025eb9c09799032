/**
 * `npm run bench:page`: renders bench/results/latest.json into docs/benchmarks-latest.md
 * (a full `npm run bench` does this itself; this is for a results file brought from elsewhere).
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { RESULTS_PAGE, type Report, resultsPage } from './lib/report.js';

const latest = path.join(import.meta.dirname, 'results', 'latest.json');
const report = JSON.parse(await readFile(latest, 'utf8')) as Report;
await writeFile(RESULTS_PAGE, resultsPage(report));
console.warn(`[bench] wrote ${path.relative(process.cwd(), RESULTS_PAGE)}`);
