/**
 * A bounded brain: claims the `model_turn` lane and runs its turns one after another until the
 * lane is empty or a time budget is spent, then returns — for hosts that start a brain per
 * event instead of keeping one running (the brain Worker: per trigger and per cron sweep).
 * The long-running brain (functions/brain-loop.ts) claims the same lane with the same lease.
 *
 * The budget bounds when a new turn may be claimed, not the turn in hand: a turn runs to its
 * end under its lease keeper. The journal is asked for once, when the first turn is in hand, so
 * a host may open it beside the first claim; if it cannot be opened the claimed item is left
 * to its lease (as a durable turn leaves it on a journal outage: the ttl spaces the retries).
 */
import type { JetStreamClient } from '@nats-io/jetstream';
import { type Clock, systemClock } from '../clock.js';
import type { Database } from '../db/handle.js';
import { JournalUnavailableError } from '../journal/index.js';
import { claim } from '../queue/index.js';
import { runBrainTurn } from './brain.js';
import type { Model } from './model.js';

/** The lease a turn holds while it runs; its keeper renews it. */
export const TURN_TTL_MS = 60_000;

export interface DrainDeps {
  db: Database;
  /** The journal, asked for once, when the first turn has been claimed. */
  journal: () => Promise<JetStreamClient>;
  model: Model;
  /** What the budget is measured on (the turns' lease keepers keep the system clock). */
  clock?: Clock;
  log?: { warn(message: string, fields?: Record<string, unknown>): void };
}

export interface DrainOptions {
  /** No turn is claimed once this long has passed since the drain began. */
  budgetMs: number;
  /** The lease of each turn (default TURN_TTL_MS). */
  ttlMs?: number;
}

export interface DrainResult {
  /** Turns claimed and run (whatever their outcome). */
  turns: number;
  /** Why it stopped: nothing left to claim, the budget spent, or NATS unreachable. */
  ended: 'empty' | 'budget' | 'journal_unavailable';
}

export async function drainTurns(deps: DrainDeps, options: DrainOptions): Promise<DrainResult> {
  const clock = deps.clock ?? systemClock;
  const ttlMs = options.ttlMs ?? TURN_TTL_MS;
  const began = clock.now();
  let js: JetStreamClient | null = null;
  let turns = 0;
  while (clock.now() - began < options.budgetMs) {
    const item = await claim(deps.db, 'model_turn', ttlMs);
    if (!item) return { turns, ended: 'empty' };
    turns++;
    try {
      js ??= await deps.journal();
      await runBrainTurn({ db: deps.db, js, model: deps.model, log: deps.log }, item, { ttlMs });
    } catch (err) {
      const cause = (err as Error).cause;
      deps.log?.warn('brain turn failed', {
        work_id: item.id,
        error: (err as Error).message,
        ...(cause instanceof Error ? { cause: cause.message } : {}),
      });
      // An outage: every turn claimed now would meet it too, and wait out a lease.
      if (js === null || err instanceof JournalUnavailableError)
        return { turns, ended: 'journal_unavailable' };
    }
  }
  return { turns, ended: 'budget' };
}
