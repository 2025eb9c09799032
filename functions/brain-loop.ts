/**
 * The brain as a running loop: `slots` claimants of the `model_turn` lane, each running one
 * durable turn at a time. An empty lane is waited on — woken by the loop's NOTIFY on Node —
 * for at most IDLE_WAIT_MS before claiming again, so a missed notification costs a few
 * seconds, never a stuck turn. Shared by the Node server (in process) and `npm run brain`.
 */
import { readFile } from 'node:fs/promises';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { WakeSource } from '../src/api/wake.js';
import type { Config } from '../src/config.js';
import type { Database } from '../src/db/handle.js';
import { claim } from '../src/queue/index.js';
import { AnthropicModel } from '../src/turns/anthropic-model.js';
import { runBrainTurn } from '../src/turns/brain.js';
import { TURN_TTL_MS } from '../src/turns/drain.js';
import type { Model } from '../src/turns/model.js';
import { parseScript, ScriptedModel } from '../src/turns/scripted-model.js';

/** Longest wait on an empty lane between claims. */
export const IDLE_WAIT_MS = 30_000;
/** The key the turn channel's notifications wake (one lane, one key). */
export const TURNS = 'model_turn';
export const DEFAULT_SLOTS = 4;

export interface BrainLoopDeps {
  db: Database;
  js: JetStreamClient;
  model: Model;
  wake?: WakeSource;
  log: { info(m: string): void; warn(m: string, f?: Record<string, unknown>): void };
}

export interface BrainLoop {
  /** Stops claiming and waits for the turns in hand to finish. */
  stop(): Promise<void>;
}

/** The model LEASEHOLD_MODEL names, or null when it names none. */
export async function modelFromConfig(config: Config): Promise<Model | null> {
  if (!config.model) return null;
  if (config.model.kind === 'scripted')
    return new ScriptedModel(parseScript(await readFile(config.model.file, 'utf8')));
  return new AnthropicModel({ apiKey: config.modelApiKey!, baseUrl: config.modelBaseUrl });
}

export function startBrainLoop(deps: BrainLoopDeps, slots = DEFAULT_SLOTS): BrainLoop {
  const stopping = new AbortController();
  const slot = async () => {
    const watch = deps.wake?.watch(TURNS);
    try {
      while (!stopping.signal.aborted) {
        let item = null;
        try {
          item = await claim(deps.db, 'model_turn', TURN_TTL_MS);
          if (item) {
            await runBrainTurn(deps, item, { ttlMs: TURN_TTL_MS });
            continue;
          }
        } catch (err) {
          deps.log.warn('brain turn failed', { work_id: item?.id, error: (err as Error).message });
        }
        if (watch) await watch.wait(IDLE_WAIT_MS, stopping.signal);
        else await new Promise((r) => setTimeout(r, 200));
      }
    } finally {
      watch?.close();
    }
  };
  const running = Array.from({ length: slots }, slot);
  deps.log.info(`brain: ${slots} turn slots`);
  return {
    stop: async () => {
      stopping.abort();
      await Promise.all(running);
    },
  };
}
