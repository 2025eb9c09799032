/**
 * worker_cold_start: what a fresh Worker isolate costs before its first answer, under workerd.
 * Each sample starts a new workerd (Miniflare's Node API) with one Worker script and times:
 *
 * - `startup_ms`: `new Miniflare` → ready. workerd loads, compiles and evaluates the module
 *   at start-up, so a script's parse and top-level work land here, on top of workerd's own;
 * - `first_request_ms`: the first request after ready (lazy work: Hono builds its router on
 *   the first match);
 * - `warm_request_ms`: the same request again.
 *
 * Subjects, interleaved sample by sample: the API Worker and the brain Worker as
 * `wrangler deploy --dry-run` bundles them, and the anchor `empty`, a Worker that answers
 * "ok" with the same compatibility settings — what workerd itself costs. The ratios (ours ÷
 * empty) and the `*_over_empty_ms` metrics isolate what our script adds. The request is the
 * console's sign-in page (no database, no credential), so only the app runs; static assets
 * are left out, as they are served before any Worker runs.
 *
 * `LEASEHOLD_COLD_START_BEFORE=<file.js>` adds the subject `api_worker_before`: another build of
 * the API Worker (an older commit's `wrangler deploy --dry-run` output), measured in the same
 * rounds for before/after figures (`cold_start_api_vs_before`).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Log, LogLevel, Miniflare } from 'miniflare';
import { buildWorker, wranglerSettings } from '../../test/helpers/workers.js';
import type { BenchContext, Metrics, Scenario } from '../lib/harness.js';

const FULL = { samples: 4 };
const SMOKE = { samples: 2 };
const PATH = '/console/sign-in';
const BEFORE = process.env.LEASEHOLD_COLD_START_BEFORE;

interface Script {
  file: string;
  /** Its wrangler config's compatibility date and flags, read once at setup. */
  compatibilityDate?: string;
  compatibilityFlags?: string[];
}

export function scenarios(ctx: BenchContext): Scenario[] {
  const sizes = ctx.smoke ? SMOKE : FULL;
  let dir = '';
  const scripts: Record<string, Script> = {};
  // The anchor's medians of the current round (it runs first in each).
  let emptyStartup = Number.NaN;
  let emptyFirst = Number.NaN;
  const sample = (name: string) => async (): Promise<Metrics> => {
    const runs: Array<{ startup: number; first: number; warm: number }> = [];
    for (let i = 0; i < sizes.samples; i++) runs.push(await coldStart(scripts[name]!));
    const m = medians(runs);
    if (name === 'empty') {
      emptyStartup = m.startup_ms;
      emptyFirst = m.first_request_ms;
      return m;
    }
    return {
      ...m,
      startup_over_empty_ms: m.startup_ms - emptyStartup,
      first_request_over_empty_ms: m.first_request_ms - emptyFirst,
    };
  };
  return [
    {
      name: 'worker_cold_start',
      description: `a fresh workerd with one Worker: start-up, first and warm request (${PATH}), median of ${sizes.samples} per round`,
      setup: async () => {
        dir = await mkdtemp(path.join(tmpdir(), 'leasehold-cold-'));
        const emptyFile = path.join(dir, 'empty.js');
        await writeFile(emptyFile, 'export default { fetch() { return new Response("ok"); } };\n');
        const [api, brain] = await Promise.all([
          buildWorker('wrangler.toml', path.join(dir, 'api')),
          buildWorker('wrangler.brain.toml', path.join(dir, 'brain')),
        ]);
        const apiCompat = await compat('wrangler.toml');
        scripts.empty = { file: emptyFile, ...apiCompat };
        scripts.api_worker = { file: api, ...apiCompat };
        scripts.brain_worker = { file: brain, ...(await compat('wrangler.brain.toml')) };
        if (BEFORE) scripts.api_worker_before = { file: BEFORE, ...apiCompat };
      },
      teardown: async () => {
        if (dir) await rm(dir, { recursive: true, force: true });
      },
      // The anchor first in every round: the other subjects' "over empty" figures use its medians.
      subjects: {
        empty: sample('empty'),
        api_worker: sample('api_worker'),
        brain_worker: sample('brain_worker'),
        ...(BEFORE ? { api_worker_before: sample('api_worker_before') } : {}),
      },
      ratios: [
        ...(BEFORE
          ? [
              {
                name: 'cold_start_api_vs_before',
                numerator: 'api_worker',
                denominator: 'api_worker_before',
                metric: 'startup_over_empty_ms',
              },
            ]
          : []),
        {
          name: 'cold_start_api_vs_empty',
          numerator: 'api_worker',
          denominator: 'empty',
          metric: 'startup_ms',
        },
        {
          name: 'cold_start_brain_vs_empty',
          numerator: 'brain_worker',
          denominator: 'empty',
          metric: 'startup_ms',
        },
        {
          name: 'first_request_api_vs_empty',
          numerator: 'api_worker',
          denominator: 'empty',
          metric: 'first_request_ms',
        },
      ],
    },
  ];
}

/** A wrangler config's compatibility settings, as the deployed Worker gets them. */
async function compat(config: string): Promise<Pick<Script, 'compatibilityDate' | 'compatibilityFlags'>> {
  const { compatibilityDate, compatibilityFlags } = (await wranglerSettings(config)).workerOptions;
  return { compatibilityDate, compatibilityFlags };
}

async function coldStart(script: Script): Promise<{ startup: number; first: number; warm: number }> {
  const { compatibilityDate, compatibilityFlags } = script;
  const started = performance.now();
  const mf = new Miniflare({
    host: '127.0.0.1',
    port: 0,
    cf: false,
    telemetry: { enabled: false },
    log: new Log(LogLevel.NONE),
    handleRuntimeStdio: (stdout: NodeJS.ReadableStream, stderr: NodeJS.ReadableStream) => {
      stdout.resume();
      stderr.resume();
    },
    modules: true,
    scriptPath: script.file,
    modulesRoot: path.dirname(script.file),
    compatibilityDate,
    compatibilityFlags,
    // Enough for the API Worker to parse its settings; the sign-in page never reaches them.
    bindings: {
      DATABASE_URL: 'postgres://cold@127.0.0.1:9/none',
      LEASEHOLD_MODEL: 'anthropic',
      LEASEHOLD_MODEL_API_KEY: 'unused',
    },
  });
  try {
    const url = await mf.ready;
    const startup = performance.now() - started;
    const request = async () => {
      const t0 = performance.now();
      const res = await fetch(new URL(PATH, url));
      const body = await res.text();
      if (res.status >= 500)
        throw new Error(`${script.file}: ${PATH} answered ${res.status}: ${body.slice(0, 300)}`);
      return performance.now() - t0;
    };
    const first = await request();
    const warm = await request();
    return { startup, first, warm };
  } finally {
    await mf.dispose();
  }
}

function medians(runs: Array<{ startup: number; first: number; warm: number }>): {
  startup_ms: number;
  first_request_ms: number;
  warm_request_ms: number;
} {
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    const mid = s.length >> 1;
    return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
  };
  return {
    startup_ms: median(runs.map((r) => r.startup)),
    first_request_ms: median(runs.map((r) => r.first)),
    warm_request_ms: median(runs.map((r) => r.warm)),
  };
}
