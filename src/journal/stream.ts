/**
 * Provisioning of the AGENT_JOURNAL stream: an explicit, idempotent step run at deploy or
 * start-up, never on the hot path. It refuses an existing stream whose config differs in a
 * field the fence depends on, rather than journal on a stream that cannot keep its promises.
 */
import {
  DiscardPolicy,
  JetStreamApiError,
  type JetStreamManager,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from '@nats-io/jetstream';
import { JournalError } from './errors.js';
import { JOURNAL_STREAM, JOURNAL_SUBJECTS } from './types.js';

export interface JournalStreamOptions {
  /** 1 for development; 3 in production (nats-server ≥ 2.11 for the fence to hold, see README). */
  replicas?: number;
  /** Store budget for the journal; -1 = unlimited. */
  maxBytes?: number;
  /** Resend-after-lost-ack dedup window (ns). Correctness beyond it comes from the index re-read. */
  duplicateWindowNs?: number;
  maxMsgSize?: number;
}

const SECOND_NS = 1_000_000_000;

export function journalStreamConfig(
  options: JournalStreamOptions = {},
): Partial<StreamConfig> & { name: string } {
  return {
    name: JOURNAL_STREAM,
    subjects: [JOURNAL_SUBJECTS],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    num_replicas: options.replicas ?? 1,
    // A full stream refuses writes (10077) and never drops a journal's history.
    discard: DiscardPolicy.New,
    max_msgs_per_subject: -1,
    max_msgs: -1,
    max_bytes: options.maxBytes ?? -1,
    // Expiry would reset the fence: journals are purged per run once it is terminal.
    max_age: 0,
    max_msg_size: options.maxMsgSize ?? 1024 * 1024,
    duplicate_window: options.duplicateWindowNs ?? 120 * SECOND_NS,
    // Tail reads must reach the leader; a direct get may be answered by a lagging replica.
    allow_direct: false,
    // Deleting the tail would rewrite the fence.
    deny_delete: true,
    deny_purge: false,
    allow_rollup_hdrs: false,
  };
}

/** Fields whose value the fence relies on; an existing stream must match them exactly. */
const FENCING_FIELDS = [
  'retention',
  'discard',
  'max_msgs_per_subject',
  'max_age',
  'allow_direct',
  'deny_delete',
  'allow_rollup_hdrs',
] as const;

export class JournalStreamMismatchError extends JournalError {
  constructor(
    readonly field: string,
    expected: unknown,
    actual: unknown,
  ) {
    super(
      `journal: stream ${JOURNAL_STREAM} has ${field} = ${JSON.stringify(actual)}; the fence needs ${JSON.stringify(expected)}`,
    );
  }
}

/**
 * Creates the stream, or checks an existing one. Returns whether it created it. Never
 * updates an existing stream: a mismatch in a fencing field is an error for an operator.
 */
export async function ensureJournalStream(
  jsm: JetStreamManager,
  options: JournalStreamOptions = {},
): Promise<{ created: boolean }> {
  const wanted = journalStreamConfig(options);
  let existing: StreamConfig | null = null;
  try {
    existing = (await jsm.streams.info(JOURNAL_STREAM)).config;
  } catch (err) {
    if (!(err instanceof JetStreamApiError && err.code === 10059)) throw err;
  }
  if (!existing) {
    try {
      await jsm.streams.add(wanted);
      return { created: true };
    } catch (err) {
      // Another process provisioned it first: check what it made.
      if (!(err instanceof JetStreamApiError && err.code === 10058)) throw err;
      existing = (await jsm.streams.info(JOURNAL_STREAM)).config;
    }
  }
  for (const field of FENCING_FIELDS) {
    const expected = wanted[field];
    const actual = existing[field] ?? defaultOf(field);
    if (actual !== expected) throw new JournalStreamMismatchError(field, expected, actual);
  }
  if (!existing.subjects?.includes(JOURNAL_SUBJECTS)) {
    throw new JournalStreamMismatchError('subjects', [JOURNAL_SUBJECTS], existing.subjects);
  }
  return { created: false };
}

function defaultOf(field: (typeof FENCING_FIELDS)[number]): unknown {
  return field === 'allow_direct' || field === 'deny_delete' || field === 'allow_rollup_hdrs'
    ? false
    : undefined;
}
