/**
 * The journal's typed outcomes. Messages are the Go package's, so logs read the same whichever
 * language wrote them.
 */
export class JournalError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A later iteration holds the step: this is a late redelivery. Ack it; write nothing. */
export class StaleError extends JournalError {
  constructor() {
    super('journal: task is stale, a later iteration holds the step');
  }
}

/** A newer claim of this iteration owns the step. Publish nothing; neither ack nor nak. */
export class FencedError extends JournalError {
  constructor() {
    super('journal: fenced by another claim');
  }
}

/** The claim has committed: nothing more may be written under it. Republish from `committed()`. */
export class CommittedError extends JournalError {
  constructor() {
    super('journal: the iteration is already committed');
  }
}

/** The crash-loop guard tripped: the step was failed; the handler must return. */
export class RestartLimitError extends JournalError {
  constructor(readonly restarts: number) {
    super(`journal: restart limit reached (${restarts})`);
  }
}

/** The AGENT_JOURNAL stream does not exist. */
export class NotProvisionedError extends JournalError {
  constructor(options?: { cause?: unknown }) {
    super(
      'journal: AGENT_JOURNAL stream not provisioned — run ensureJournalStream (npm run journal:provision) before opening journals',
      options,
    );
  }
}

/** A recovering claim was asked for a different call than the one recorded at its position. */
export class ReplayMismatchError extends JournalError {
  constructor(detail: string) {
    super(`journal: replay mismatch: ${detail}`);
  }
}

/** A second journal call started while one was pending: calls are matched by position. */
export class ConcurrentUseError extends JournalError {
  constructor() {
    super('journal: concurrent use of one journal handle; issue calls one at a time');
  }
}

/** A transport or server failure that is not fencing (size limits, full stream, timeouts). */
export class JournalTransportError extends JournalError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(`journal: ${message}`, options);
  }
}

/**
 * NATS cannot be reached right now: the connection is down (dropped, reconnecting or closed),
 * or it dropped — or gave no answer in time — while a call waited. Raised at once rather than
 * after the client's buffering and timeouts, so the caller can give the work up and retry
 * later: a durable turn leaves its item uncompleted, and the next claimant resumes the step
 * from the journal. `mayBeStored` is true when a write had gone out before the link failed:
 * its record may have landed, so that handle writes nothing more.
 */
export class JournalUnavailableError extends JournalTransportError {
  readonly mayBeStored: boolean;

  constructor(message: string, options: { cause?: unknown; mayBeStored?: boolean } = {}) {
    super(`unavailable: ${message}`, { cause: options.cause });
    this.mayBeStored = options.mayBeStored ?? false;
  }
}

/**
 * A stored record that cannot be decoded: its body is not JSON, or not of its type's shape (a
 * tool.result without a string `key`, a commit whose action is not one of the three, …).
 * Written by something other than a journal writer, or damaged. Reading the step stops here;
 * `check()` reports it as a violation instead, in the words of `finding`.
 */
export class CorruptRecordError extends JournalError {
  /** What is wrong with the record, after "seq N": "has a body that is not JSON", … */
  readonly finding: string;

  constructor(
    readonly subject: string,
    readonly seq: number,
    /** `type` and `detail` (bodies.ts) when the body is JSON of the wrong shape. */
    options: { cause?: unknown; type?: string; detail?: string } = {},
  ) {
    const { type, detail } = options;
    super(
      `journal: record ${seq} on ${subject} is corrupt: ${detail === undefined ? 'its body is not JSON' : `its ${type} body ${detail}`}`,
      { cause: options.cause },
    );
    this.finding = detail === undefined ? 'has a body that is not JSON' : `has a ${type} body that ${detail}`;
  }
}

/** The `error` of an interrupted tool result. */
export const ERR_INTERRUPTED = 'interrupted';
