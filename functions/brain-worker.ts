/**
 * The brain on Cloudflare Workers: a Worker of its own (wrangler.brain.toml, `leasehold-brain`),
 * outside the API Worker's bundle, that runs the sessions' `model_turn` items as durable turns
 * (src/turns/drain.ts). Nothing keeps running between invocations, so it is started:
 *
 * - `fetch` (`POST /turns`): the API Worker's trigger through its service binding `BRAIN`, sent
 *   after a request that may have enqueued a turn (functions/brain-trigger.ts). It claims and
 *   runs turns until the lane is empty or TRIGGER_BUDGET_MS has passed, and answers
 *   `{turns, ended}`. The run is also handed to `waitUntil`, so a caller that goes away does
 *   not cut the turn in hand.
 * - `scheduled` (every minute): the sweep, for what no trigger took — a trigger that was lost,
 *   a turn whose invocation ended mid-turn (its lease lapses and the claim takes it over; the
 *   journal replays what was recorded).
 *
 * Each invocation opens its own Neon Pool and its own NATS connection (workerd's WebSocket),
 * both closed at its end; the NATS connection is opened beside the first claim, so a turn does
 * not wait for it. An invocation runs its turns one after another: each request that enqueues a
 * turn starts an invocation of its own, so turns of different sessions run side by side in
 * different invocations, and no invocation's CPU time or subrequests are shared among many
 * turns. The journal stream and the database migrations are deploy steps
 * (`npm run journal:provision`, `npm run db:migrate`), as for the API Worker.
 *
 * Settings: DATABASE_URL, NATS_URL (wss://), LEASEHOLD_MODEL=anthropic with
 * LEASEHOLD_MODEL_API_KEY and LEASEHOLD_MODEL_BASE_URL, LEASEHOLD_NEON_WS_PROXY (local only).
 * `scripted:<file>` is refused: a Worker has no files to read it from.
 */
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { type Config, ConfigError, parseConfig } from '../src/config.js';
import { connectNeon } from '../src/db/drivers/neon.js';
import { connectJournal } from '../src/journal/connect.js';
import { AnthropicModel } from '../src/turns/anthropic-model.js';
import { type DrainResult, drainTurns } from '../src/turns/drain.js';
import { BRAIN_TRIGGER_PATH } from './brain-trigger.js';

/** A triggered invocation claims no new turn after this long (Workers keeps `waitUntil` work 30 s). */
const TRIGGER_BUDGET_MS = 20_000;
/** A sweep claims no new turn after this long, so sweeps a minute apart rarely overlap. */
const SWEEP_BUDGET_MS = 45_000;

type Env = Record<string, unknown>;
interface Ctx {
  waitUntil(p: Promise<unknown>): void;
}

interface BrainSettings {
  databaseUrl: string;
  natsUrl: string;
  apiKey: string;
  baseUrl: string | null;
  neonWsProxy: string | null;
}

const log = {
  warn: (message: string, fields?: Record<string, unknown>) =>
    console.warn(`[leasehold-brain] ${message}`, fields ? JSON.stringify(fields) : ''),
};

/** The settings the brain cannot run without; a ConfigError names the first one missing. */
function brainSettings(env: Env): BrainSettings {
  const config: Config = parseConfig(env);
  if (config.databaseUrl === null)
    throw new ConfigError('DATABASE_URL is not set (a Neon connection string)');
  if (config.natsUrl === null)
    throw new ConfigError('NATS_URL is not set: the brain records every model call in the journal (wss://…)');
  if (config.model === null)
    throw new ConfigError('LEASEHOLD_MODEL is not set: the brain Worker needs anthropic');
  if (config.model.kind === 'scripted')
    throw new ConfigError(
      'LEASEHOLD_MODEL=scripted:<file> is not available on Workers (a Worker has no files to read the ' +
        'script from): use anthropic, with LEASEHOLD_MODEL_BASE_URL for any server that speaks the Messages API',
    );
  return {
    databaseUrl: config.databaseUrl,
    natsUrl: config.natsUrl,
    apiKey: config.modelApiKey!,
    baseUrl: config.modelBaseUrl,
    neonWsProxy: config.neonWsProxy,
  };
}

/** One invocation's drain, over connections of its own, closed before it settles. */
async function drain(settings: BrainSettings, budgetMs: number): Promise<DrainResult> {
  const conn = connectNeon(
    settings.databaseUrl,
    settings.neonWsProxy ? { localProxy: settings.neonWsProxy } : {},
  );
  // Beside the first claim, not after it. A failure is the drain's to meet, if it needs NATS.
  const nats: Promise<NatsConnection> = connectJournal(settings.natsUrl, {
    reconnect: false,
    name: 'leasehold-brain',
  });
  nats.catch(() => {});
  try {
    return await drainTurns(
      {
        db: conn.db,
        journal: async () => jetstream(await nats),
        model: new AnthropicModel({ apiKey: settings.apiKey, baseUrl: settings.baseUrl }),
        log,
      },
      { budgetMs },
    );
  } finally {
    await Promise.all([conn.close().catch(() => {}), nats.then((nc) => nc.close()).catch(() => {})]);
  }
}

const json = (status: number, body: unknown) => Response.json(body, { status });
const error = (status: number, type: string, message: string) =>
  json(status, { type: 'error', error: { type, message } });

export default {
  async fetch(request: Request, env: Env, ctx: Ctx): Promise<Response> {
    const { pathname } = new URL(request.url);
    if (pathname !== BRAIN_TRIGGER_PATH) return error(404, 'not_found_error', 'not found');
    if (request.method !== 'POST') return error(405, 'invalid_request_error', 'use POST');
    let settings: BrainSettings;
    try {
      settings = brainSettings(env);
    } catch (err) {
      // Bad configuration is the operator's to fix: say which setting, reveal nothing else.
      const message = err instanceof ConfigError ? err.message : 'bad environment';
      log.warn(`configuration error: ${message}`);
      return error(500, 'api_error', message);
    }
    const run = drain(settings, TRIGGER_BUDGET_MS);
    ctx.waitUntil(run.catch(() => {}));
    try {
      return json(200, await run);
    } catch (err) {
      log.warn('drain failed', { error: (err as Error).message });
      return error(500, 'api_error', 'the brain could not run its turns');
    }
  },

  // A failed sweep throws, so the cron's run is marked failed (with the reason in the logs).
  async scheduled(_event: unknown, env: Env, ctx: Ctx): Promise<void> {
    const run = (async () => drain(brainSettings(env), SWEEP_BUDGET_MS))();
    ctx.waitUntil(run.catch(() => {}));
    try {
      const result = await run;
      if (result.turns > 0) log.warn('the sweep ran turns no trigger had taken', { ...result });
    } catch (err) {
      log.warn('sweep failed', { error: (err as Error).message });
      throw err;
    }
  },
};
