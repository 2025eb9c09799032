/**
 * The brain: one durable turn per claimed `model_turn` item. A turn reads the session's log
 * and the responses its journal recorded, asks the model once, commits the response to the
 * journal and settles it into the log (src/loop/turn.ts) — so a successor that takes the item
 * over replays the recorded response instead of calling the model again, and the log gets the
 * turn's events exactly once.
 *
 * Glossary: the journal's run is the session, its step `model_turn`, and each turn one
 * iteration (durable-turn.ts); a turn's `inputSeq` is the last event its request was built
 * from, recorded in its commit so later requests put its response back at that point.
 */
import type { JetStreamClient } from '@nats-io/jetstream';
import type { Clock } from '../clock.js';
import type { Database } from '../db/handle.js';
import type { Commit, JournalRecord, Json } from '../journal/index.js';
import { type ResponseBlock, settleTurn, startTurn, type ToolJudge, type TurnResult } from '../loop/index.js';
import { complete, type Item } from '../queue/index.js';
import { allCalls, listEvents, type Session, type SessionEvent } from '../sessions/index.js';
import { runDurableTurn, type TurnOutcome } from './durable-turn.js';
import { buildMessages, HistoryError } from './history.js';
import { type Model, ModelError, type ModelRequest, type ModelResponse, sessionErrorOf } from './model.js';
import { type AgentTool, evaluatePermission, toolDefinitions } from './toolset.js';

/** The journal step of the brain's turns. */
export const TURN_STEP = 'model_turn';
/** Output tokens a turn may ask for; the agent definition has no field for it. */
const MAX_TOKENS = 8_192;

export interface BrainDeps {
  db: Database;
  js: JetStreamClient;
  model: Model;
  clock?: Clock;
  log?: { warn(message: string, fields?: Record<string, unknown>): void };
}

export interface BrainOptions {
  /** The lease the keeper renews while the turn runs (the claim's ttl). */
  ttlMs: number;
  stallMs?: number;
}

/**
 * Runs one claimed `model_turn`. An item whose session is gone or has no agent (the platform
 * lane's own) is completed at once with nothing written.
 */
export async function runBrainTurn(
  deps: BrainDeps,
  item: Item,
  options: BrainOptions,
): Promise<TurnOutcome | 'no_agent'> {
  const session = await startTurn(deps.db, item);
  if (!session) {
    await complete(deps.db, item);
    return 'no_agent';
  }
  const tools = (session.agent!.tools ?? []) as AgentTool[];
  const judge: ToolJudge = {
    isCustom: (name) => tools.some((t) => t.type === 'custom' && t.name === name),
    evaluate: (name) => evaluatePermission(tools, name) as ReturnType<ToolJudge['evaluate']>,
  };
  return runDurableTurn(
    deps,
    item,
    async (turn) => {
      const records = turn.journal.stepRecords();
      const output = await think(deps, session, tools, turn.task.iteration, records, turn.signal, (fn) =>
        turn.journal.model(fn),
      );
      return { action: 'complete', output: output as unknown as Json };
    },
    {
      ttlMs: options.ttlMs,
      stallMs: options.stallMs,
      settle: async (commit: Commit | null, task) => {
        const result: TurnResult =
          commit?.output != null
            ? (commit.output as unknown as TurnResult)
            : { kind: 'error', inputSeq: session.lastSeq, error: sessionErrorOf(new Error('restart limit')) };
        await settleTurn(deps.db, item, task.iteration, result, judge);
      },
    },
  );
}

/** Builds the request, makes the (durable) model call, and says what the turn produced. */
async function think(
  deps: BrainDeps,
  session: Session,
  tools: AgentTool[],
  iteration: number,
  records: readonly JournalRecord[],
  signal: AbortSignal,
  durable: (fn: () => Promise<Json>) => Promise<Json>,
): Promise<TurnResult> {
  const [events, calls] = await Promise.all([
    listEvents(deps.db, session.id, { order: 'asc', fetch: Number.MAX_SAFE_INTEGER }),
    allCalls(deps.db, session.id),
  ]);
  const inputSeq = events.at(-1)?.seq ?? 0;
  const { responses, inputs } = recordedTurns(records, iteration);
  try {
    const agent = session.agent!;
    const request: ModelRequest = {
      model: modelId(agent.model),
      ...(typeof agent.system === 'string' && agent.system ? { system: agent.system } : {}),
      messages: buildMessages(
        inTurnOrder(events, inputs),
        responses,
        new Map(calls.map((c) => [c.eventId, c.modelToolUseId])),
      ),
      tools: toolDefinitions(tools),
      max_tokens: MAX_TOKENS,
    };
    const response = recordedResponse(
      await durable(
        async () =>
          (await deps.model.create(request, {
            sessionId: session.id,
            callIndex: responses.size,
            signal,
          })) as unknown as Json,
      ),
    );
    return {
      kind: 'response',
      inputSeq,
      content: response.content as ResponseBlock[],
      stopReason: response.stop_reason,
      usage: numericUsage(response.usage),
    };
  } catch (err) {
    if (!(err instanceof ModelError) && !(err instanceof HistoryError)) throw err;
    deps.log?.warn('turn failed', { session_id: session.id, iteration, error: err.message });
    return { kind: 'error', inputSeq, error: sessionErrorOf(err) };
  }
}

/**
 * The responses earlier turns recorded (iteration → response), and where each turn's input
 * ended (iteration → inputSeq, from its commit). The current iteration's own records are the
 * journal's to replay, not history.
 */
function recordedTurns(
  records: readonly JournalRecord[],
  current: number,
): { responses: Map<number, ModelResponse>; inputs: Map<number, number> } {
  const responses = new Map<number, ModelResponse>();
  const inputs = new Map<number, number>();
  for (const r of records) {
    const it = r.task.iteration;
    if (it >= current) continue;
    if (r.type === 'model.response' && !responses.has(it)) {
      responses.set(it, recordedResponse(r.data.output));
    } else if (r.type === 'commit') {
      const output = r.data.output;
      if (isJsonObject(output) && typeof output.inputSeq === 'number') inputs.set(it, output.inputSeq);
    }
  }
  return { responses, inputs };
}

/**
 * A response as the journal keeps it (JSON) read back as the SDK's type. Only `think` records
 * model responses in these journals, and what it records is the ModelResponse the model
 * answered, so this is the one place that JSON becomes a ModelResponse again.
 */
function recordedResponse(output: Json | undefined): ModelResponse {
  return output as unknown as ModelResponse;
}

function isJsonObject(value: Json | undefined): value is { [key: string]: Json } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The log in the order the model saw it: a turn's agent events go right after the event its
 * request ended with, ahead of any message that arrived while it ran (which a later turn
 * answers). Everything else keeps its sequence order.
 */
function inTurnOrder(events: SessionEvent[], inputs: ReadonlyMap<number, number>): SessionEvent[] {
  const key = (e: SessionEvent) => {
    const at = e.turn === null ? undefined : inputs.get(e.turn);
    return at === undefined ? e.seq : at + 0.5;
  };
  return events
    .map((e, i) => ({ e, i, k: key(e) }))
    .sort((a, b) => a.k - b.k || a.i - b.i)
    .map(({ e }) => e);
}

function modelId(model: unknown): string {
  if (typeof model === 'string') return model;
  if (model && typeof model === 'object' && typeof (model as { id?: unknown }).id === 'string') {
    return (model as { id: string }).id;
  }
  throw new HistoryError('malformed_event', null, 'the session’s agent names no model');
}

function numericUsage(usage: Record<string, unknown> | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(usage ?? {}))
    if (typeof v === 'number' && Number.isFinite(v)) out[k] = v;
  return out;
}
