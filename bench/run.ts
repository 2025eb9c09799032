/**
 * `npm run bench`: every scenario in bench/scenarios against the local PostgreSQL (and its
 * own nats-server), each subject interleaved with its anchors; prints a Markdown table and
 * writes bench/results/latest.json. `--smoke` runs one small round of everything (CI: it
 * must complete, goals are not judged) and writes bench/results/smoke.json instead.
 * `--only <substring>` runs the matching scenarios; `--rounds <n>` runs every scenario n rounds
 * instead of its own number (to decide a goal whose rounds spread across it) and writes
 * bench/results/partial.json, whose ratios the full run's table does not hold.
 *
 * Goals are reported, by their median and by an interval for it (met, short, or undecided
 * while the rounds spread across the goal: lib/verdict.ts), and never fail the run: absolute
 * speed on a shared machine is not a test result.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { prepareBenchDatabase } from './lib/db.js';
import { type BenchContext, type Results, runScenario, type Scenario } from './lib/harness.js';
import { markdown, RESULTS_PAGE, type Report, resultsPage, writeReport } from './lib/report.js';

const HERE = import.meta.dirname;

function ensureAnchorsInstalled(): void {
  if (existsSync(path.join(HERE, 'node_modules/graphile-worker'))) return;
  console.warn('[bench] installing the anchors (bench/package-lock.json)');
  execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--silent'], { cwd: HERE, stdio: 'inherit' });
}

export type ScenarioFactory = (ctx: BenchContext) => Scenario[] | Promise<Scenario[]>;

async function loadScenarios(ctx: BenchContext): Promise<Scenario[]> {
  const dir = path.join(HERE, 'scenarios');
  const files = (await readdir(dir)).filter((f) => f.endsWith('.ts')).sort();
  const all: Scenario[] = [];
  for (const file of files) {
    const mod = (await import(pathToFileURL(path.join(dir, file)).href)) as { scenarios?: ScenarioFactory };
    if (typeof mod.scenarios !== 'function')
      throw new Error(`bench/scenarios/${file} exports no scenarios()`);
    all.push(...(await mod.scenarios(ctx)));
  }
  return all;
}

async function postgresVersion(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<{ v: string }>('SELECT current_setting($1) AS v', ['server_version'])).rows[0]!
      .v;
  } finally {
    await client.end();
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const smoke = args.includes('--smoke');
  const onlyAt = args.indexOf('--only');
  const only = onlyAt >= 0 ? args[onlyAt + 1] : undefined;
  const rounds = roundsArg(args);
  ensureAnchorsInstalled();
  const started = performance.now();
  const databaseUrl = await prepareBenchDatabase();
  const ctx: BenchContext = { databaseUrl, smoke, rounds, log: (m) => console.warn(`[bench] ${m}`) };
  const scenarios = (await loadScenarios(ctx)).filter((s) => !only || s.name.includes(only));
  if (!scenarios.length) throw new Error(`no scenario matches ${only}`);

  const results: Results = { scenarios: [], ratios: [], goals: [] };
  for (const scenario of scenarios) {
    const scenarioStarted = performance.now();
    const r = await runScenario(scenario, ctx);
    // Set-up, every round and teardown: where a run's time goes, against its ~15 min budget.
    ctx.log(`${scenario.name}: ${((performance.now() - scenarioStarted) / 1000).toFixed(1)} s in all`);
    results.scenarios.push(...r.scenarios);
    results.ratios.push(...r.ratios);
    results.goals.push(...r.goals);
  }
  const cpus = os.cpus();
  const report: Report = {
    ...results,
    descriptions: Object.fromEntries(scenarios.map((s) => [s.name, s.description])),
    machine: {
      date: new Date().toISOString(),
      node: process.version,
      cpus: cpus.length,
      cpuModel: cpus[0]?.model.trim() ?? 'unknown',
      postgres: await postgresVersion(databaseUrl),
      smoke,
    },
  };
  const partial = only !== undefined || rounds !== undefined;
  const file = path.join(HERE, 'results', smoke ? 'smoke.json' : partial ? 'partial.json' : 'latest.json');
  await writeReport(file, report);
  if (!smoke && !partial) await writeFile(RESULTS_PAGE, resultsPage(report));
  process.stdout.write(`${markdown(report)}\n`);
  console.warn(
    `[bench] wrote ${path.relative(process.cwd(), file)} in ${((performance.now() - started) / 1000).toFixed(0)} s`,
  );
}

/** `--rounds <n>`: a whole number of rounds, at least 1; undefined when not given. */
function roundsArg(args: readonly string[]): number | undefined {
  const at = args.indexOf('--rounds');
  if (at < 0) return undefined;
  const n = Number(args[at + 1]);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`--rounds takes a whole number of rounds, not ${args[at + 1]}`);
  return n;
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(`[bench] failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
