/**
 * The queue's outcomes that are not success, one class each. The API layer maps them onto
 * HTTP in one place (not found → 404, conflict → 409, heartbeat mismatch → 412, lease lost →
 * 409); nothing here knows about HTTP.
 */

/** Base class, so a caller can tell a queue outcome from a driver or programming error. */
export class QueueError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The item is not visible to the caller: missing, another environment's, or not on its lane. */
export class WorkNotFoundError extends QueueError {
  constructor(readonly workId: string) {
    super(`work item ${workId} not found`);
  }
}

/** The item exists but is already past the requested transition (e.g. stopping a stopped item). */
export class WorkConflictError extends QueueError {
  constructor(
    readonly workId: string,
    readonly state: string,
  ) {
    super(`work item ${workId} is already ${state}`);
  }
}

/** What the row looked like when a heartbeat's precondition failed. */
export interface HeartbeatCurrentState {
  lastHeartbeat: string | null;
  state: string;
}

/**
 * The heartbeat's optimistic-concurrency precondition failed: the expected value is not the
 * row's current last_heartbeat, or the first-heartbeat claim found the item not `starting`.
 * `current` is null when the expected value could not even be parsed.
 */
export class HeartbeatMismatchError extends QueueError {
  constructor(
    readonly workId: string,
    readonly current: HeartbeatCurrentState | null,
  ) {
    super('expected_last_heartbeat does not match the current lease');
  }
}

/**
 * The item is no longer this holder's: its lease lapsed and another claim took it, it was
 * finished or cancelled, or a renewal could not finish within what the lease had left.
 */
export class LeaseLostError extends QueueError {
  constructor(
    readonly workId: string,
    reason = 'lease lost',
    options?: { cause?: unknown },
  ) {
    super(`work item ${workId}: ${reason}`, options);
  }
}

/**
 * The holder made no progress for longer than its keeper's stall budget, so the keeper
 * cancelled the work and stopped renewing. Distinct from LeaseLostError on purpose: nobody
 * took the lease, it was given up so the item becomes reclaimable as if the holder had died.
 */
export class WorkStalledError extends QueueError {
  constructor(
    readonly workId: string,
    readonly stallMs: number,
  ) {
    super(`work item ${workId}: no progress for more than ${stallMs} ms`);
  }
}

/** Enqueue named a session or environment that does not exist, or a session bound elsewhere. */
export class UnknownSessionError extends QueueError {
  constructor(
    readonly sessionId: string,
    readonly environmentId: string,
    options?: { cause?: unknown },
  ) {
    super(`session ${sessionId} does not exist in environment ${environmentId}`, options);
  }
}

/** A metadata patch would leave the item with more keys than its caller allows. */
export class MetadataLimitError extends QueueError {
  constructor(
    readonly workId: string,
    readonly maxPairs: number,
  ) {
    super(`work item metadata may hold at most ${maxPairs} keys after the patch`);
  }
}
