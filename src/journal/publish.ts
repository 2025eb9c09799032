/**
 * One fenced publish of one record, and what its failure means.
 *
 * Every record is published with its stable `Nats-Msg-Id` (`msgId(task, index)`) and
 * `Nats-Expected-Last-Subject-Sequence` = the last sequence its writer saw. A publish whose
 * PubAck never came back is repeated **identically** (same id, same expected sequence, same
 * bytes): inside the dedup window the server answers `duplicate: true` with the original
 * sequence; after it, the stale expectation is rejected (10071) and the caller's re-read finds
 * the record by its index. So a resend never stores a record twice.
 *
 * Failures are sorted into what the caller can act on:
 * - 10071 `wrong last sequence` → `WrongLastSequenceError` (internal): someone wrote in
 *   between. Not fencing by itself; Open re-classifies, Append re-reads.
 * - 10059 `stream not found` → `NotProvisionedError`.
 * - no responder on the subject: no stream leader took it, so nothing was stored. The stream is
 *   missing (`NotProvisionedError`), or it is replicated and electing a leader, or the cluster
 *   is not answering (`JournalUnavailableError`): one stream info request tells which.
 * - the cluster's "not now" (no leader yet, or one that could not replicate: link.ts
 *   `isClusterNotNow`) → `JournalUnavailableError`: nothing was stored.
 * - any other server answer (10054 too big, 10077 stream full, …) and the client refusing to
 *   send (payload over max_payload) → `JournalTransportError`: nothing was stored.
 * - no answer after every retry → `OutcomeUnknownError`: the record may or may not be stored;
 *   so is a resend after a lost answer that fails any other way than 10071 (a 10071 sends the
 *   writer to re-read, which finds the record if the lost one landed).
 * - the connection down before the publish → `JournalUnavailableError` at once, nothing sent;
 *   the connection dropping while the publish waits → `OutcomeUnknownError` at once (a
 *   `JournalUnavailableError` that may be stored): no resend, since a request on a dropped
 *   connection is only buffered (link.ts).
 */
import { JetStreamApiError, type JetStreamClient, type PubAck, PubHeaders } from '@nats-io/jetstream';
import { ConnectionError, TimeoutError } from '@nats-io/nats-core';
import { NoResponderError, publishForAck } from './acks.js';
import { recordHeaders } from './codec.js';
import { JournalTransportError, JournalUnavailableError, NotProvisionedError } from './errors.js';
import { connectionOf, isClusterNotNow, LinkDownError, linkUp } from './link.js';
import { JOURNAL_STREAM, journalSubject, msgId, type RecordType, type Task } from './types.js';

/** Identical resends after a lost PubAck, counting the first publish. */
export const PUBLISH_TRIES = 3;
/**
 * The longest one publish waits for its PubAck (less when the client's own timeout is
 * shorter). A fenced append on a healthy stream answers within milliseconds — one quorum
 * write — and a resend is free (the msg id dedups it), so waiting the client's default 5 s
 * three times over would only keep a turn holding its lease on a server that is not there.
 */
export const PUBLISH_TIMEOUT_MS = 2_000;
/**
 * How long a publish nobody took waits to learn whether the stream exists. A missing stream is
 * answered at once (by the cluster's metadata leader); a stream that is electing a leader is
 * not answered until it has one, which is what the caller would be waiting for.
 */
export const STREAM_PROBE_MS = 500;

const WRONG_LAST_SEQUENCE = 10071;
const STREAM_NOT_FOUND = 10059;

/** The fence refused the write: the subject's last sequence is not the one the writer saw. */
export class WrongLastSequenceError extends Error {
  constructor(options: { cause: unknown }) {
    super('journal: wrong last subject sequence', options);
    this.name = 'WrongLastSequenceError';
  }
}

/**
 * A write whose PubAck never arrived — after every identical resend, or because the connection
 * dropped while it waited: it may have been stored. The handle refuses further writes (a later
 * record would reuse its index); stop, and let the next delivery of the task take the step over.
 */
export class OutcomeUnknownError extends JournalUnavailableError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { cause: options.cause, mayBeStored: true });
  }
}

/** A client's options never change, and `getOptions()` copies them: read them once per client. */
const timeouts = new WeakMap<JetStreamClient, number>();
function publishTimeout(js: JetStreamClient): number {
  let ms = timeouts.get(js);
  if (ms === undefined) {
    ms = Math.min(js.getOptions().timeout ?? PUBLISH_TIMEOUT_MS, PUBLISH_TIMEOUT_MS);
    timeouts.set(js, ms);
  }
  return ms;
}

export async function publishRecord(
  js: JetStreamClient,
  task: Task,
  type: RecordType,
  body: Uint8Array,
  index: number,
  expectedSeq: number,
): Promise<PubAck> {
  const subject = journalSubject(task.runId, task.stepId);
  const timeout = publishTimeout(js);
  const nc = connectionOf(js);
  if (!nc)
    throw new JournalTransportError(
      'the JetStream client carries no NATS connection (nats.js keeps it as `nc`)',
    );
  // The same headers for every try: a resend must be identical (the client never changes them).
  const h = recordHeaders(type, task, index);
  h.set(PubHeaders.MsgIdHdr, msgId(task, index));
  h.set(PubHeaders.ExpectedLastSubjectSequenceHdr, String(expectedSeq));
  let lastError: unknown;
  for (let attempt = 0; attempt < PUBLISH_TRIES; attempt++) {
    if (!linkUp(nc)) {
      // Sending now would only park the record in the client's buffer.
      if (attempt === 0) throw new JournalUnavailableError(`${type} #${index}: the NATS connection is down`);
      break;
    }
    try {
      return await publishForAck(nc, subject, body, h, timeout);
    } catch (err) {
      if (!isLostAnswer(err)) {
        if (attempt === 0 || isWrongLastSequence(err)) throw await classify(js, err);
        // An earlier try may have landed; this failure does not say whether it did.
        lastError = err;
        break;
      }
      lastError = err;
      if (err instanceof LinkDownError) break;
    }
  }
  throw new OutcomeUnknownError(`no answer to ${type} #${index}; it may be stored`, { cause: lastError });
}

function isWrongLastSequence(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === WRONG_LAST_SEQUENCE;
}

/** The request went out (or may have) and no answer came: only a resend can tell. */
function isLostAnswer(err: unknown): boolean {
  return err instanceof LinkDownError || err instanceof TimeoutError || err instanceof ConnectionError;
}

async function classify(js: JetStreamClient, err: unknown): Promise<Error> {
  if (err instanceof JetStreamApiError) {
    if (err.code === WRONG_LAST_SEQUENCE) return new WrongLastSequenceError({ cause: err });
    if (err.code === STREAM_NOT_FOUND) return new NotProvisionedError({ cause: err });
    // Refused until the cluster has its leaders again: nothing was stored.
    if (isClusterNotNow(err))
      return new JournalUnavailableError(`${err.code} ${err.message}`, { cause: err });
    return new JournalTransportError(`${err.code} ${err.message}`, { cause: err });
  }
  // No stream leader listens on the subject.
  if (err instanceof NoResponderError) {
    return (await streamMissing(js))
      ? new NotProvisionedError({ cause: err })
      : new JournalUnavailableError(`no leader of ${JOURNAL_STREAM} took the write; nothing was stored`, {
          cause: err,
        });
  }
  return new JournalTransportError((err as Error)?.message ?? String(err), { cause: err });
}

/** True only when the server says the stream does not exist within `STREAM_PROBE_MS`. */
async function streamMissing(js: JetStreamClient): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const probe = js
    .jetstreamManager(false)
    .then((jsm) => jsm.streams.info(JOURNAL_STREAM))
    .then(
      () => false,
      (err: unknown) => err instanceof JetStreamApiError && err.code === STREAM_NOT_FOUND,
    );
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), STREAM_PROBE_MS);
  });
  try {
    return await Promise.race([probe, late]);
  } finally {
    clearTimeout(timer);
  }
}
