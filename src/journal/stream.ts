/**
 * Provisioning of the AGENT_JOURNAL stream: an explicit, idempotent step run at deploy or
 * start-up, never on the hot path. It refuses an existing stream whose config differs in a
 * field the fence depends on, and a replicated stream on a server too old to fence it
 * (server-version.ts), rather than journal on a stream that cannot keep its promises; it
 * brings an existing stream's limits (discard policy, age, bytes) to what it is given.
 *
 * Why `discard: old`. A run's journal is its session's (run = session): it lives as long as
 * the session and is purged when the session is deleted (`purgeRun`, from housekeeping). With
 * `discard: new`, a stream at a limit refuses every append (10077) — every live turn of every
 * session fails until space is freed, and nothing frees it but deletions. With `discard: old`
 * a limit never refuses an append: the stream makes room by dropping its oldest records, which
 * are the oldest sessions' history. That never breaks the fence silently: a writer whose own
 * tail was dropped meets a subject sequence behind its own and refuses to write through it
 * (writer.ts, "tail behind"); an empty subject holds nobody's claim to fence. What a limit
 * does cost is history: a session whose records were dropped loses the recorded model
 * responses its brain replays. So both limits are off unless an operator sets them, and then
 * as a budget to size above the live sessions' journals, not as the way space is reclaimed —
 * deletions (and archived-session retention) are.
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
import { assertFenceHolds } from './server-version.js';
import { JOURNAL_STREAM, JOURNAL_SUBJECTS } from './types.js';

export interface JournalStreamOptions {
  /** 1 for development; 3 in production (nats-server ≥ 2.11.0, refused on older: server-version.ts). */
  replicas?: number;
  /**
   * Store budget in bytes (0 or -1: none). At it, the oldest records are dropped, never an
   * append refused. Undefined: a new stream has none and an existing one keeps its own.
   */
  maxBytes?: number;
  /** Age limit in ms (0: none); the same rules as `maxBytes`. Keep it longer than any session lives. */
  maxAgeMs?: number;
  /** Resend-after-lost-ack dedup window (ns). Correctness beyond it comes from the index re-read. */
  duplicateWindowNs?: number;
  maxMsgSize?: number;
}

const SECOND_NS = 1_000_000_000;
const MS_NS = 1_000_000;

export function journalStreamConfig(
  options: JournalStreamOptions = {},
): Partial<StreamConfig> & { name: string } {
  return {
    name: JOURNAL_STREAM,
    subjects: [JOURNAL_SUBJECTS],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    num_replicas: options.replicas ?? 1,
    // A limit drops the oldest records and never refuses an append (see the module doc).
    discard: DiscardPolicy.Old,
    max_msgs_per_subject: -1,
    max_msgs: -1,
    max_bytes: bytesLimit(options.maxBytes),
    max_age: ageLimit(options.maxAgeMs),
    max_msg_size: options.maxMsgSize ?? 1024 * 1024,
    duplicate_window: options.duplicateWindowNs ?? 120 * SECOND_NS,
    // Tail reads must reach the leader; a direct get may be answered by a lagging replica.
    allow_direct: false,
    // Deleting the tail would rewrite the fence.
    deny_delete: true,
    // Purging a deleted session's run is how the journal is reclaimed.
    deny_purge: false,
    allow_rollup_hdrs: false,
  };
}

/**
 * Fields whose value the fence (or the purge of a deleted session's run) relies on; an existing
 * stream must match them exactly. None of them can be put right in place: JetStream refuses to
 * change a retention policy or to clear deny_delete / deny_purge, and the others would change
 * what journals already written mean.
 */
const FENCING_FIELDS = [
  'retention',
  'max_msgs_per_subject',
  'allow_direct',
  'deny_delete',
  'deny_purge',
  'allow_rollup_hdrs',
] as const;

/** The limits an existing stream is brought to in place (a stream update keeps every record). */
type LimitField = 'discard' | 'max_age' | 'max_bytes';

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
 * Creates the stream, or checks an existing one and brings its limits to the given ones:
 * `discard` always (a stream provisioned with `discard: new` is moved to `old`), `max_age` and
 * `max_bytes` only when given, so a process started without them leaves another's alone. A
 * mismatch in a fencing field is an error for an operator, never updated. Returns whether it
 * created the stream and which limits it changed. Concurrent calls with the same options are
 * safe: each update writes the same values. A replicated stream, wanted or found, on a server
 * that cannot fence it is refused (`ReplicatedFenceUnsupportedError`).
 */
export async function ensureJournalStream(
  jsm: JetStreamManager,
  options: JournalStreamOptions = {},
): Promise<{ created: boolean; updated: LimitField[] }> {
  const wanted = journalStreamConfig(options);
  assertFenceHolds(jsm, wanted.num_replicas ?? 1);
  let existing: StreamConfig | null = null;
  try {
    existing = (await jsm.streams.info(JOURNAL_STREAM)).config;
  } catch (err) {
    if (!(err instanceof JetStreamApiError && err.code === 10059)) throw err;
  }
  if (!existing) {
    try {
      await jsm.streams.add(wanted);
      return { created: true, updated: [] };
    } catch (err) {
      // Another process provisioned it first: check what it made.
      if (!(err instanceof JetStreamApiError && err.code === 10058)) throw err;
      existing = (await jsm.streams.info(JOURNAL_STREAM)).config;
    }
  }
  // Made by hand, or by an earlier release that did not ask.
  assertFenceHolds(jsm, existing.num_replicas ?? 1);
  for (const field of FENCING_FIELDS) {
    const expected = wanted[field];
    const actual = existing[field] ?? defaultOf(field);
    if (actual !== expected) throw new JournalStreamMismatchError(field, expected, actual);
  }
  if (!existing.subjects?.includes(JOURNAL_SUBJECTS)) {
    throw new JournalStreamMismatchError('subjects', [JOURNAL_SUBJECTS], existing.subjects);
  }
  const limits: Partial<Pick<StreamConfig, LimitField>> = { discard: wanted.discard };
  if (options.maxAgeMs !== undefined) limits.max_age = wanted.max_age;
  if (options.maxBytes !== undefined) limits.max_bytes = wanted.max_bytes;
  const updated = (Object.keys(limits) as LimitField[]).filter((f) => existing[f] !== limits[f]);
  if (updated.length > 0) await jsm.streams.update(JOURNAL_STREAM, limits);
  return { created: false, updated };
}

function bytesLimit(bytes: number | undefined): number {
  return bytes === undefined || bytes <= 0 ? -1 : bytes;
}

function ageLimit(ms: number | undefined): number {
  return ms === undefined || ms <= 0 ? 0 : ms * MS_NS;
}

function defaultOf(field: (typeof FENCING_FIELDS)[number]): unknown {
  return field === 'allow_direct' ||
    field === 'deny_delete' ||
    field === 'deny_purge' ||
    field === 'allow_rollup_hdrs'
    ? false
    : undefined;
}
