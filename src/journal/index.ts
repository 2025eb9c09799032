/**
 * The agent journal's public surface: one fenced, append-only JetStream subject per agent step
 * (`journal.{run}.{step}` in `AGENT_JOURNAL`). See types.ts for the terms and journal.ts for
 * the handle.
 */
export { type CheckReport, check } from './check.js';
export { compareRank, identityKey } from './claim-rank.js';
export { decodeMsg } from './codec.js';
export { connectJournal, type JournalConnectOptions } from './connect.js';
export {
  CommittedError,
  ConcurrentUseError,
  CorruptRecordError,
  ERR_INTERRUPTED,
  FencedError,
  JournalError,
  JournalTransportError,
  JournalUnavailableError,
  NotProvisionedError,
  ReplayMismatchError,
  RestartLimitError,
  StaleError,
} from './errors.js';
export {
  type AppendType,
  DEFAULT_RESTART_LIMIT,
  Journal,
  type ModelFn,
  type OpenOptions,
} from './journal.js';
export type { PlacedInput, ReplayMode } from './open.js';
export { readPage } from './page.js';
export { OutcomeUnknownError } from './publish.js';
export { purgeRun } from './purge.js';
export { read, readTail } from './read.js';
export type { ToolCall, ToolResult } from './replay.js';
export { ScriptedModel } from './scripted-model.js';
export {
  fenceHolds,
  REPLICATED_FENCE_MIN_VERSION,
  ReplicatedFenceUnsupportedError,
} from './server-version.js';
export { ensureJournalStream, JournalStreamMismatchError, type JournalStreamOptions } from './stream.js';
export type { ToolFn } from './tool.js';
export {
  type BodyOf,
  type ClaimBody,
  type Commit,
  type CommitAction,
  type InputPlacedBody,
  JOURNAL_STREAM,
  type JournalRecord,
  type Json,
  journalSubject,
  type ModelResponseBody,
  msgId,
  type OpaqueRecord,
  type PauseBody,
  type RecordBodies,
  type RecordHead,
  type RecordOf,
  type RecordType,
  type Replay,
  storedType,
  type Task,
  type ToolIntentBody,
  type ToolResultBody,
} from './types.js';
