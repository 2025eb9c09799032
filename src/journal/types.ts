/**
 * The agent journal: one append-only JetStream subject per step (`journal.{run}.{step}` in
 * stream `AGENT_JOURNAL`), so a successor can take over a step without repeating a model call
 * or starting an unsafe tool call twice, and a stale holder cannot write at all.
 *
 * Terminology:
 * - **task**: one dispatch of a step — run, step, iteration, attempt, dispatch nonce,
 *   delivered (the delivery count) and stream_seq (the task message's sequence). All seven
 *   travel in every record's headers.
 * - **claim**: the record `open` appends to take the step for a task. Claims of one iteration
 *   rank by (attempt, stream_seq, delivered); a newer claim **fences** every older one.
 * - **fence**: every append carries `Nats-Expected-Last-Subject-Sequence` = the last sequence
 *   its writer saw; a write after someone else's is rejected and re-read, never lost.
 * - **recovering claim**: a later delivery of the same attempt — it replays by position what the
 *   previous holder recorded. A **new attempt** replays nothing but unsafe tool intents.
 * - **commit**: the last record of an iteration; `continue`, `complete` or `fail`.
 *
 * Record bodies and headers are byte-compatible with the Go package (dagnats `journal`), so Go
 * and TypeScript writers can share a journal.
 */

export const JOURNAL_STREAM = 'AGENT_JOURNAL';
export const JOURNAL_SUBJECTS = 'journal.>';

export const HEADER = {
  type: 'Dagnats-Journal-Type',
  iteration: 'Dagnats-Journal-Iteration',
  attempt: 'Dagnats-Journal-Attempt',
  nonce: 'Dagnats-Dispatch-Nonce',
  delivered: 'Dagnats-Journal-Delivered',
  streamSeq: 'Dagnats-Journal-Stream-Seq',
  index: 'Dagnats-Journal-Index',
} as const;

export interface Task {
  runId: string;
  stepId: string;
  iteration: number;
  attempt: number;
  dispatchNonce?: string;
  delivered: number;
  /** The task message's stream sequence; 0 when unknown. */
  streamSeq?: number;
}

/** Any JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

// The bodies are type aliases, not interfaces, so that each (the commit aside, whose state is
// bytes) is itself a `Json` value and travels as one without a conversion.
export type ClaimBody = {
  iteration: number;
  attempt: number;
  dispatch_nonce?: string;
  delivered: number;
  stream_seq?: number;
};
export type ModelResponseBody = {
  call: number;
  output?: Json;
};
export type Replay = 'safe' | 'unsafe';
export type ToolIntentBody = {
  name: string;
  input?: Json;
  call: number;
  key: string;
  replay: Replay;
};
export type ToolResultBody = {
  call: number;
  key: string;
  output?: Json;
  error?: string;
  interrupted?: boolean;
  partial?: Json;
};
export type PauseBody = {
  name: string;
  duration_ms: number;
};
export type InputPlacedBody = {
  request_id: string;
  mode: string;
  content?: Json;
};
export type CommitAction = 'continue' | 'complete' | 'fail';
/** `state` is bytes: base64 in the record (Go's `[]byte`), a Uint8Array here. */
export type Commit = {
  action: CommitAction;
  output?: Json;
  state?: Uint8Array;
  error?: string;
  failure_type?: string;
  retry_after_ms?: number;
  wait?: Json;
};

/** The body each record type carries: `entry` is the handler's own JSON, the rest the SDK's. */
export interface RecordBodies {
  claim: ClaimBody;
  entry: Json;
  'model.response': ModelResponseBody;
  'tool.intent': ToolIntentBody;
  'tool.result': ToolResultBody;
  pause: PauseBody;
  'input.placed': InputPlacedBody;
  commit: Commit;
}

/** The record types a writer writes (the `Dagnats-Journal-Type` header). */
export type RecordType = keyof RecordBodies;
export type BodyOf<T extends RecordType> = RecordBodies[T];

/** What every decoded record has besides its type and body. */
export interface RecordHead {
  /** Stream sequence: the record's position and the readers' cursor. */
  seq: number;
  time: string;
  task: Task;
  index: number;
  /** The expected last-subject-sequence the record was written under, when stored. */
  expectedSeq: number | null;
  msgId: string | null;
}

/** A decoded record of type `T`: its body has been checked to be `BodyOf<T>` (codec.ts). */
export type RecordOf<T extends RecordType> = RecordHead & { type: T; data: BodyOf<T> };

/**
 * A record whose `Dagnats-Journal-Type` this reader does not know, kept as it is: a newer
 * writer (Go or TypeScript) may add a type, and a step holding one must stay readable, open to
 * replay and checkable. Its type travels in `storedType` (the wire shows it under that name);
 * replay passes over it — it answers no call and is no tool's progress — and check() holds it
 * to what every record keeps (its claim before it, the fence chain).
 */
export type OpaqueRecord = RecordHead & { type: 'opaque'; storedType: string; data: Json };

/** One decoded record: narrow on `type` to read its body (`if (r.type === 'tool.result') r.data.key`). */
export type JournalRecord = { [T in RecordType]: RecordOf<T> }[RecordType] | OpaqueRecord;

/** The type a record was stored under (an opaque record's own header value). */
export function storedType(r: JournalRecord): string {
  return r.type === 'opaque' ? r.storedType : r.type;
}

/** `journal.{run}.{step}`: run and step must each be a single NATS subject token. */
export function journalSubject(runId: string, stepId: string): string {
  return `journal.${runId}.${stepId}`;
}

const TOKEN = /^[^\s.*>]+$/;
export function assertToken(what: string, value: string): void {
  if (!TOKEN.test(value))
    throw new TypeError(`${what} must be a single NATS subject token: ${JSON.stringify(value)}`);
}

/** `{run}.{step}.{attempt}.{iteration}.{stream_seq}.{delivered}.{index}` — stable per record. */
export function msgId(task: Task, index: number): string {
  return `${task.runId}.${task.stepId}.${task.attempt}.${task.iteration}.${task.streamSeq ?? 0}.${task.delivered}.${index}`;
}
