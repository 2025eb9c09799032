import { sql } from 'drizzle-orm';
import { PG_FOREIGN_KEY_VIOLATION, pgCode } from '../db/errors.js';
import { fixedSql } from '../db/fixed-sql.js';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { type Timestamp, ts } from '../db/time.js';
import { newId } from '../ids.js';
import { captureTraceContext } from '../telemetry/trace-context.js';
import { withSpan } from '../telemetry/tracing.js';
import { createdWork } from './created-work.js';
import { UnknownSessionError } from './errors.js';
import { LIVE_STATES, laneOf, WORK_COLUMNS } from './sql.js';
import type { SessionWork, TraceContext, WorkKind } from './types.js';

/** The channel a poll-lane enqueue notifies, payload `{"environment_id": …}`. */
export const WORK_CHANNEL = 'leasehold_work';

/** The environment a `WORK_CHANNEL` payload (`NOTIFY_WORK`'s) names; null when it names none readably. */
export function notifiedEnvironment(payload: string): string | null {
  try {
    const id = (JSON.parse(payload) as { environment_id?: unknown }).environment_id;
    return typeof id === 'string' ? id : null;
  } catch {
    return null;
  }
}

/** Wakes the long polls of the environment of `w` (delivered when the transaction commits). */
export const NOTIFY_WORK = sql`pg_notify(${WORK_CHANNEL}, json_build_object('environment_id', w.environment_id)::text)::text`;

export interface EnqueueInput {
  environmentId: string;
  sessionId: string;
  kind: WorkKind;
  /** String metadata projected onto the new item (e.g. from the session); `{}` when absent. */
  metadata?: Record<string, string>;
  /**
   * Trace context to store. Absent → the active span's, if any. Only the exec kinds store
   * one: a model_turn is run by the platform's own loop, which has its own trace.
   */
  traceContext?: TraceContext | null;
  /**
   * Bind the session to the environment first when it is not bound to any, in the same
   * statement (the platform lane's first use of a session). A session bound elsewhere is
   * never rebound: it fails as an unknown session, with nothing written.
   */
  bindSession?: boolean;
}

export interface EnqueueResult {
  /** False when a live item of the same (session, kind) already covers the work. */
  created: boolean;
  /** The new item, or the live one that covers it. */
  work: SessionWork;
}

/**
 * Inserts a queued item unless a live (queued/starting/active) item of the same session and
 * kind exists, and returns whichever item now covers the work. Runs on the handle it is
 * given, so inside a transaction it commits (and wakes pollers) only with the caller's
 * writes: an event append and the enqueue it triggers land together or not at all.
 *
 * One statement when it creates, a second to read the live item when the slot is taken. The
 * environment's kind decides a tool_exec's lane (`laneOf`); a poll-lane item notifies
 * `WORK_CHANNEL` so long polls wake at once (inside a transaction, at commit). The session
 * must exist and be bound to this environment (`UnknownSessionError`).
 *
 * The trace context is captured before the `queue.enqueue` span opens: the item belongs to
 * the caller's turn, and its consumer's spans parent there, not on this short span.
 */
export async function enqueue(db: SqlHandle, input: EnqueueInput): Promise<EnqueueResult> {
  const metadata = validMetadata(input.metadata);
  const trace =
    input.kind === 'model_turn'
      ? null
      : input.traceContext === undefined
        ? captureTraceContext()
        : input.traceContext;
  const attributes = {
    'environment.id': input.environmentId,
    'session.id': input.sessionId,
    'work.kind': input.kind,
  };
  return withSpan('queue.enqueue', attributes, async (span) => {
    const result = await insertOrReuse(db, input, metadata, trace);
    span.setAttributes({ 'work.id': result.work.id, 'work.created': result.created });
    return result;
  });
}

async function insertOrReuse(
  db: SqlHandle,
  input: EnqueueInput,
  metadata: Record<string, string>,
  trace: TraceContext | null,
): Promise<EnqueueResult> {
  // The insert does nothing when a live item holds the slot; the next statement reads that
  // item. A live item committed by a concurrent transaction after the insert's snapshot is
  // seen there too. A miss on both means the live item just finished: insert again.
  for (let attempt = 0; attempt < 3; attempt++) {
    const created = await insertNew(db, input, metadata, trace);
    if (created) return { created: true, work: created };
    const live = await findLive(db, input);
    if (live) return { created: false, work: live };
    if (!(await sessionBound(db, input.sessionId, input.environmentId))) {
      throw new UnknownSessionError(input.sessionId, input.environmentId);
    }
  }
  throw new Error(`enqueue ${input.sessionId}/${input.kind}: the live slot kept changing under the insert`);
}

/**
 * The new item, or null when the slot is taken (or the environment unknown). Only the insert:
 * reading the live item in the same statement made every creating call pay to set up that
 * read as well (about an eighth of the statement's server time), so it waits for a miss. The
 * insert answers only its `createdAt`: the client holds the rest (`createdWork`), and the
 * insert states every value that assumes.
 */
async function insertNew(
  db: SqlHandle,
  input: EnqueueInput,
  metadata: Record<string, string>,
  trace: TraceContext | null,
): Promise<SessionWork | null> {
  const id = newId('work');
  const { environmentId, sessionId, kind } = input;
  const insert = input.bindSession ? BIND_AND_INSERT : INSERT;
  try {
    const row = await maybeRow<{ createdAt: Timestamp; notified?: unknown }>(
      db,
      insert({
        id,
        environmentId,
        sessionId,
        kind,
        metadata: JSON.stringify(metadata),
        trace: trace === null ? null : JSON.stringify(trace),
      }),
    );
    if (!row) return null;
    return createdWork({ id, environmentId, sessionId, kind, metadata, traceContext: trace }, row.createdAt);
  } catch (err) {
    if (pgCode(err) === PG_FOREIGN_KEY_VIOLATION) {
      throw new UnknownSessionError(sessionId, environmentId, { cause: err });
    }
    throw err;
  }
}

const CREATED_AT = sql.raw(ts('w.created_at'));
const p = sql.placeholder;
type InsertValues = 'id' | 'environmentId' | 'sessionId' | 'kind' | 'metadata' | 'trace';

const INSERT_ITEM = sql`
        INSERT INTO work_items AS w (id, environment_id, session_id, kind, lane, state, data_type, claims,
                                     metadata, trace_context, created_at)
        SELECT ${p('id')}, ${p('environmentId')}, ${p('sessionId')}, ${p('kind')}, ${laneOf(p('kind'), p('environmentId'))},
               'queued', 'session', 0, ${p('metadata')}::jsonb, ${p('trace')}::jsonb, now()
        ON CONFLICT (session_id, kind) WHERE state IN ${LIVE_STATES} DO NOTHING
        RETURNING ${CREATED_AT} AS "createdAt", CASE WHEN w.lane = 'poll' THEN ${NOTIFY_WORK} END AS notified`;

/**
 * Binds an unbound session as part of the enqueue's statement. Data-modifying CTEs run to
 * completion whether or not anything reads them, and the item's foreign key is checked at
 * the end of the statement, so the new binding is there when it is. A session bound
 * elsewhere is left alone (DO NOTHING) and the item's insert then fails its foreign key; so
 * does an id with a journal purge queued (a platform session deleted by retention, come
 * back): that binding is `bindSession`'s, which locks the purge and cancels or waits for it.
 * Only a look here, no lock: a purge that this statement cannot see was queued after it
 * began, and is hours from being taken. No arbiter named, so both of `sessions`' unique keys
 * are arbiters: a racing first bind meets its twin as a conflict, not a 23505
 * (`insertOrRead` in `sessions/bind-session.ts`).
 */
const BIND_SESSION = sql`bind AS (
        INSERT INTO sessions (id, environment_id)
        SELECT ${p('sessionId')}, e.id FROM environments e
         WHERE e.id = ${p('environmentId')}
           AND NOT EXISTS (SELECT 1 FROM journal_purges p WHERE p.run_id = ${p('sessionId')})
        ON CONFLICT DO NOTHING
      )`;

/** Every enqueue sends one of these two (fixed: rendered once, `fixed-sql.ts`). */
const INSERT = fixedSql<InsertValues>(INSERT_ITEM);
const BIND_AND_INSERT = fixedSql<InsertValues>(sql`WITH ${BIND_SESSION}${INSERT_ITEM}`);

async function findLive(db: SqlHandle, input: EnqueueInput): Promise<SessionWork | null> {
  return maybeRow<SessionWork>(
    db,
    sql`SELECT ${WORK_COLUMNS} FROM work_items w
         WHERE w.session_id = ${input.sessionId} AND w.kind = ${input.kind} AND w.state IN ${LIVE_STATES}
           AND w.environment_id = ${input.environmentId}`,
  );
}

async function sessionBound(db: SqlHandle, sessionId: string, environmentId: string): Promise<boolean> {
  const row = await maybeRow(
    db,
    sql`SELECT 1 FROM sessions WHERE id = ${sessionId} AND environment_id = ${environmentId}`,
  );
  return row !== null;
}

/** The item's metadata: string values only (`{}` when absent). */
export function validMetadata(metadata: Record<string, string> | undefined): Record<string, string> {
  if (metadata === undefined) return {};
  for (const [key, value] of Object.entries(metadata)) {
    if (typeof value !== 'string') throw new TypeError(`metadata ${JSON.stringify(key)} must be a string`);
  }
  return metadata;
}
