/**
 * What a model or tool call at a position answers from the records of its iteration
 * (docs/journal.md, "Durable tool calls" and "Durable model responses"). Pure: the journal handle performs the plan.
 *
 * - Records of this attempt since the iteration's last commit (the *epoch*) replay **by
 *   position**: the model response or tool call recorded at position k answers call k.
 * - Unsafe tool intents of earlier attempts are honoured **by content**: the first one with
 *   the same name and canonical input not yet honoured in this attempt answers the call under
 *   its own (earlier) key, with its result, or as interrupted. Safe calls and model requests
 *   of earlier attempts are never reused.
 *
 * An unsafe tool is thus started at most once per position; ambiguity (started, never
 * finished) surfaces as an `interrupted` result carrying the key and the entries its holder
 * appended while it ran, instead of a silent rerun.
 */

import { identityKey } from './claim-rank.js';
import { ERR_INTERRUPTED, ReplayMismatchError } from './errors.js';
import { canonicalJson } from './json.js';
import type {
  JournalRecord,
  Json,
  ModelResponseBody,
  RecordOf,
  Replay,
  Task,
  ToolIntentBody,
  ToolResultBody,
} from './types.js';

type IntentRecord = RecordOf<'tool.intent'>;

/** One tool invocation: the handler sets `name` and `input`; the journal sets `call` and `key`. */
export interface ToolCall {
  name: string;
  input?: Json;
  /** The call's position among this iteration's tool calls, from 0. */
  call: number;
  /** `{run}.{step}.{iteration}.{call}`: the same on every delivery and attempt, for dedup. */
  key: string;
}

export type ToolResult = ToolResultBody;

export type ToolPlan =
  /** The recorded result answers the call; nothing runs or is written. */
  | { kind: 'recorded'; result: ToolResult }
  /** Recorded and current declarations both say safe: run again, append only the result. */
  | { kind: 'rerun'; key: string }
  /** Answer without running: append `intent` (when given) and `result`. */
  | { kind: 'answer'; intent?: ToolIntentBody; result: ToolResult }
  /** Nothing recorded answers the call: intent, run, result. */
  | { kind: 'fresh' };

export function toolKey(task: Task, call: number): string {
  return `${task.runId}.${task.stepId}.${task.iteration}.${call}`;
}

export class ReplayBook {
  readonly #task: Task;
  /** This iteration's records before the claim. */
  readonly #records: readonly JournalRecord[];
  readonly #epoch: readonly JournalRecord[];
  /** Earlier attempts' unsafe intents, one per signature (key, name, input), in journal order. */
  readonly #candidates = new Map<string, IntentRecord>();
  /** Signatures of the candidates this attempt has honoured. */
  readonly #honoured = new Set<string>();
  /** This attempt's honour records, each with the earlier intent it answers for. */
  readonly #honourOf = new Map<IntentRecord, IntentRecord>();

  constructor(task: Task, records: readonly JournalRecord[], epoch: readonly JournalRecord[]) {
    this.#task = task;
    this.#records = records;
    this.#epoch = epoch;
    const inEpoch = new Set(epoch);
    for (const r of records) {
      if (r.type !== 'tool.intent' || inEpoch.has(r) || r.data.replay !== 'unsafe') continue;
      // An honour record repeats its original's key and content, so one signature is one call.
      const sig = signature(r.data);
      if (!this.#candidates.has(sig)) this.#candidates.set(sig, r);
    }
    // Replays how the previous holders of this attempt matched: each of their intents took the
    // first candidate of its signature not yet taken; the others ran fresh.
    for (const r of epoch) {
      if (r.type !== 'tool.intent') continue;
      const sig = signature(r.data);
      const original = this.#candidates.get(sig);
      if (original && !this.#honoured.has(sig)) {
        this.#honoured.add(sig);
        this.#honourOf.set(r, original);
      }
    }
  }

  /** The model response this attempt recorded at position `call`, if any. */
  modelResponse(call: number): ModelResponseBody | undefined {
    for (const r of this.#epoch) if (r.type === 'model.response' && r.data.call === call) return r.data;
    return undefined;
  }

  /** Records that this handle honoured an earlier call, so no later call honours it again. */
  noteHonoured(intent: ToolIntentBody): void {
    this.#honoured.add(signature(intent));
  }

  planTool(call: number, name: string, input: Json | undefined, replay: Replay): ToolPlan {
    const key = toolKey(this.#task, call);
    const recorded = this.#intentAt(call);
    if (recorded) {
      const intent = recorded.data;
      if (intent.name !== name || canonicalJson(intent.input) !== canonicalJson(input)) {
        throw new ReplayMismatchError(
          `tool call ${call} was recorded as ${describe(intent.name, intent.input)}, replayed as ${describe(name, input)}`,
        );
      }
      const result = this.#resultOf(recorded);
      if (result) return { kind: 'recorded', result };
      // An honour whose result was never written: answer again from the earlier call.
      const original = this.#honourOf.get(recorded);
      if (original) return { kind: 'answer', result: this.#answerFrom(original, call) };
      if (intent.replay === 'safe' && replay === 'safe') return { kind: 'rerun', key };
      return { kind: 'answer', result: this.#interrupted(recorded, call, key) };
    }
    const wanted = canonicalJson(input);
    const honour = [...this.#candidates].find(([sig, c]) => {
      const body = c.data;
      return body.name === name && canonicalJson(body.input) === wanted && !this.#honoured.has(sig);
    })?.[1];
    if (!honour) return { kind: 'fresh' };
    const earlier = honour.data;
    const intent: ToolIntentBody = { name, call, key: earlier.key, replay: 'unsafe' };
    if (input !== undefined) intent.input = input;
    return { kind: 'answer', intent, result: this.#answerFrom(honour, call) };
  }

  /** The intent this attempt recorded at position `call`, if any. */
  #intentAt(call: number): IntentRecord | undefined {
    for (const r of this.#epoch) if (r.type === 'tool.intent' && r.data.call === call) return r;
    return undefined;
  }

  /** The result recorded for an intent: same attempt, same call position, same key, after it. */
  #resultOf(intent: IntentRecord): ToolResult | undefined {
    const { call, key } = intent.data;
    for (const x of this.#records) {
      if (
        x.seq > intent.seq &&
        x.type === 'tool.result' &&
        x.task.attempt === intent.task.attempt &&
        x.data.call === call &&
        x.data.key === key
      ) {
        return { ...x.data };
      }
    }
    return undefined;
  }

  /** An earlier call's outcome, restated at position `call` under the earlier call's key. */
  #answerFrom(earlierIntent: IntentRecord, call: number): ToolResult {
    const { key } = earlierIntent.data;
    const result = this.#resultOf(earlierIntent);
    if (result) return { ...result, call, key };
    return this.#interrupted(earlierIntent, call, key);
  }

  /** The entries the intent's writer appended after it, while the tool ran. */
  #interrupted(intent: IntentRecord, call: number, key: string): ToolResult {
    const partial: Json[] = [];
    for (const r of this.#records) {
      if (r.seq > intent.seq && r.type === 'entry' && identityKey(r.task) === identityKey(intent.task)) {
        partial.push(r.data);
      }
    }
    return { call, key, error: ERR_INTERRUPTED, interrupted: true, partial };
  }
}

function signature(intent: Pick<ToolIntentBody, 'key' | 'name' | 'input'>): string {
  return `${intent.key}\n${intent.name}\n${canonicalJson(intent.input)}`;
}

function describe(name: string, input: Json | undefined): string {
  return `${name}(${canonicalJson(input)})`;
}
