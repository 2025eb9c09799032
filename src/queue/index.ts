/**
 * The work queue's public surface. See `types.ts` for the terminology; each operation lives
 * in a file named for it (the claim lane's proof-carrying writes share `lease.ts`).
 */

export { ack, STARTUP_LEASE_MS } from './ack.js';
export type { AckCall } from './ack-many.js';
export { type BrowsedWork, browseWork } from './browse-work.js';
export { cancelSession } from './cancel-session.js';
export { claim } from './claim.js';
export { CLAIM_MANY_MAX, claimMany } from './claim-many.js';
export { type CompleteAndClaimResult, completeAndClaim } from './complete-and-claim.js';
export { type CompleteManyResult, completeMany } from './complete-many.js';
export { completeThenClaim } from './complete-then-claim.js';
export { completeThenClaimMany, type StepsResult } from './complete-then-claim-many.js';
export { drain } from './drain.js';
export {
  type EnqueueInput,
  type EnqueueResult,
  enqueue,
  notifiedEnvironment,
  WORK_CHANNEL,
} from './enqueue.js';
export { enqueueHealthcheck, type HealthcheckInput, type HealthcheckResult } from './enqueue-healthcheck.js';
export { ENQUEUE_MANY_MAX, enqueueMany } from './enqueue-many.js';
export { type EnvironmentHealthchecks, environmentHealthchecks } from './environment-healthchecks.js';
export { type EnvironmentSummary, environmentSummaries } from './environment-summaries.js';
export {
  type HeartbeatCurrentState,
  HeartbeatMismatchError,
  LeaseLostError,
  MetadataLimitError,
  QueueError,
  UnknownSessionError,
  WorkConflictError,
  WorkNotFoundError,
  WorkStalledError,
} from './errors.js';
export { getWork } from './get-work.js';
export { heartbeat } from './heartbeat.js';
export type { HeartbeatCall } from './heartbeat-many.js';
export { finalizeAbandoned, type HousekeepingOptions, reapPolls } from './housekeeping.js';
export { inspectWork } from './inspect-work.js';
export { type KeepLeaseOptions, keepLease, LeaseKeeper } from './keeper.js';
export { assertLease, complete, extend, requeue } from './lease.js';
export { listWork, type WorkCursor } from './list-work.js';
export { QUEUE_METER_SCOPE, type QueueMetricsRegistration, registerQueueMetrics } from './metrics.js';
export { DEFAULT_RECLAIM_MS, FINALIZE_BATCH, poll } from './poll.js';
export { pollMany } from './poll-many.js';
export { recordPoll } from './record-poll.js';
export { retireStoppedWork } from './retention.js';
export {
  pruneSamples,
  type QueueSample,
  readSamples,
  SAMPLE_RETENTION_MINUTES,
  sampleQueues,
} from './samples.js';
export { sessionWork } from './session-work.js';
export { stats, WORKERS_POLLING_WINDOW_MS } from './stats.js';
export { stop, stopWork } from './stop.js';
export type { StopCall } from './stop-many.js';
export * from './types.js';
export { updateMetadata } from './update-metadata.js';
export { WireFolds, wireFolds, writeAlone } from './wire-folds.js';
export { type WireWrite, type WireWriteAnswer, wireWritesMany } from './wire-writes.js';
export { type ClaimCall, directCalls, type PollCall, type StepCall, type WorkCalls } from './work-calls.js';
