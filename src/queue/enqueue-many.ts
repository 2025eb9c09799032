import { sql } from 'drizzle-orm';
import { PG_FOREIGN_KEY_VIOLATION, pgCode, pgDetail } from '../db/errors.js';
import { rows, type SqlHandle } from '../db/handle.js';
import { type Timestamp, ts } from '../db/time.js';
import { newId } from '../ids.js';
import { captureTraceContext } from '../telemetry/trace-context.js';
import { withSpan } from '../telemetry/tracing.js';
import { createdWork, type NewItem } from './created-work.js';
import { type EnqueueInput, type EnqueueResult, NOTIFY_WORK, validMetadata } from './enqueue.js';
import { UnknownSessionError } from './errors.js';
import { LIVE_STATES, laneOf, NO_WORK_COLUMNS, WORK_COLUMNS } from './sql.js';
import type { SessionWork, TraceContext, WorkKind } from './types.js';

/**
 * The most inputs one `enqueueMany` takes. A batch is one statement that holds its slots'
 * locks until it ends; past a thousand items the per-item saving is gone while racing
 * enqueues wait longer, so larger sets are the caller's to split.
 */
export const ENQUEUE_MANY_MAX = 1000;

/**
 * `enqueue` for many inputs in one statement: for each input, the new item or the live
 * (queued/starting/active) item of its session and kind that already covers the work, in
 * input order. Per input it means exactly what `enqueue` means — lane from the environment,
 * string metadata, trace context of exec kinds only, poll-lane items notify `WORK_CHANNEL` —
 * and it reads as if the inputs were enqueued one after another: a (session, kind) repeated
 * in the batch is created once, and the repeats get that item with `created: false`.
 *
 * All or nothing on binding: when any input names an unknown session or environment, or a
 * session bound elsewhere, nothing is inserted and it throws `UnknownSessionError` for the
 * first such input. Like `enqueue`, it runs on the handle it is given, so inside a
 * transaction its items commit (and wake pollers) with the caller's writes; there the failure
 * aborts the caller's transaction, which can no longer be asked which input came first, and
 * the error names the one the database refused.
 *
 * Why a batch at all: a sequential caller pays one round trip and one commit per item; here
 * it pays one for up to `ENQUEUE_MANY_MAX` items.
 */
export async function enqueueMany(db: SqlHandle, inputs: readonly EnqueueInput[]): Promise<EnqueueResult[]> {
  if (inputs.length > ENQUEUE_MANY_MAX) {
    throw new RangeError(
      `enqueueMany takes at most ${ENQUEUE_MANY_MAX} inputs, got ${inputs.length}: split the batch`,
    );
  }
  if (inputs.length === 0) return [];
  // Captured before the span opens, as `enqueue` does: the items belong to the caller's turn.
  const active = captureTraceContext();
  const { slots, slotOf, slotByKey } = toSlots(inputs, active);
  return withSpan('queue.enqueue_many', { 'work.count': inputs.length }, async (span) => {
    const resolved = await insertOrReuse(db, slots, slotByKey);
    const results = slots.length === inputs.length ? resolved : withRepeats(resolved, slotOf);
    span.setAttributes({ 'work.created': results.filter((r) => r.created).length });
    return results;
  });
}

/** One result per input when some inputs repeat a slot: the first created it, the repeats found it live. */
function withRepeats(resolved: readonly EnqueueResult[], slotOf: readonly number[]): EnqueueResult[] {
  const seen = new Set<number>();
  return slotOf.map((index) => {
    const { created, work } = resolved[index]!;
    const first = !seen.has(index);
    seen.add(index);
    return { created: created && first, work };
  });
}

/**
 * One distinct (environment, session, kind) of the batch, with the id it would be created
 * under: exactly the fields the statement reads, since the batch is sent as their JSON. Its
 * place in the batch stays on the client (an index into `slots`), and metadata is left out
 * when empty: each field is text to write, send and parse per item.
 */
interface Slot {
  id: string;
  environment_id: string;
  session_id: string;
  kind: WorkKind;
  metadata?: Record<string, string>;
  trace_context?: TraceContext;
}

/**
 * Folds repeats onto their first occurrence (whose metadata and trace context win, as the
 * first of sequential enqueues would) and validates every input before anything is sent.
 */
function toSlots(inputs: readonly EnqueueInput[], active: TraceContext | null) {
  const slots: Slot[] = [];
  const byKey = new Map<string, number>();
  const slotOf = inputs.map((input) => {
    const metadata = validMetadata(input.metadata);
    const key = slotKey(input.environmentId, input.sessionId, input.kind);
    const known = byKey.get(key);
    if (known !== undefined) return known;
    const trace =
      input.kind === 'model_turn' ? null : input.traceContext === undefined ? active : input.traceContext;
    const slot: Slot = {
      id: newId('work'),
      environment_id: input.environmentId,
      session_id: input.sessionId,
      kind: input.kind,
    };
    // Left out rather than `null`: the statement must store SQL NULL, never a JSON null.
    if (trace !== null) slot.trace_context = trace;
    if (Object.keys(metadata).length > 0) slot.metadata = metadata;
    byKey.set(key, slots.length);
    slots.push(slot);
    return slots.length - 1;
  });
  return { slots, slotOf, slotByKey: byKey };
}

async function insertOrReuse(
  db: SqlHandle,
  slots: Slot[],
  slotByKey: ReadonlyMap<string, number>,
): Promise<EnqueueResult[]> {
  const resolved: EnqueueResult[] = new Array(slots.length);
  // The slots still open, by their index in `slots` (so in input order).
  let pending: readonly number[] = slots.map((_, index) => index);
  // As in `enqueue`: a live item committed by a concurrent transaction after the statement's
  // snapshot makes its insert do nothing and stays invisible to the same statement's read.
  // The next statement, on the slots still open, sees it — or inserts, if it just finished.
  for (let attempt = 0; attempt < 3 && pending.length > 0; attempt++) {
    const sent = pending.length === slots.length ? slots : pending.map((index) => slots[index]!);
    const answered = await insertOrFindLive(db, sent);
    for (const row of answered) {
      if (row.created) {
        markCreated(resolved, slots, pending, row);
        continue;
      }
      const slot = slotByKey.get(slotKey(row.environmentId!, row.sessionId!, row.kind!));
      if (slot !== undefined) resolved[slot] = { created: false, work: toWork(row) };
    }
    pending = pending.filter((index) => resolved[index] === undefined);
  }
  if (pending.length > 0) {
    const first = slots[pending[0]!]!;
    throw new Error(
      `enqueueMany ${first.session_id}/${first.kind}: the live slot kept changing under the insert`,
    );
  }
  return resolved;
}

/**
 * Resolves the slots the insert created: every one of `sent` (indexes into `slots`) when it
 * created as many, else those whose ids it names.
 */
function markCreated(
  resolved: EnqueueResult[],
  slots: readonly Slot[],
  sent: readonly number[],
  summary: SlotRow,
): void {
  const made = (index: number) => {
    resolved[index] = { created: true, work: createdWork(newItem(slots[index]!), summary.insertedAt!) };
  };
  if (summary.createdCount === sent.length) {
    for (const index of sent) made(index);
    return;
  }
  if (summary.createdIds === null) return;
  const byId = new Map(sent.map((index) => [slots[index]!.id, index]));
  for (const id of summary.createdIds.split(' ')) made(byId.get(id)!);
}

/** A slot's identity; NUL cannot occur in a Postgres text value, so it cannot blur two keys together. */
function slotKey(environmentId: string, sessionId: string, kind: string): string {
  return `${environmentId}\0${sessionId}\0${kind}`;
}

function newItem(slot: Slot): NewItem {
  return {
    id: slot.id,
    environmentId: slot.environment_id,
    sessionId: slot.session_id,
    kind: slot.kind,
    metadata: slot.metadata ?? {},
    traceContext: slot.trace_context ?? null,
  };
}

/**
 * The statement's answer, one of two shapes: a live item that covers a slot (`created` false,
 * the item's columns), or exactly one summary of the insert (`created` true: how many items
 * it created, their ids space-separated (NULL when none), and their `createdAt` as
 * `insertedAt`; no item columns).
 */
type SlotRow = Partial<SessionWork> & {
  created: boolean;
  createdCount: number | null;
  createdIds: string | null;
  insertedAt: Timestamp | null;
  notified?: unknown;
};

/** The statement's `now()`, which every item it inserts carries as `created_at`. */
const INSERTED_AT = sql.raw(ts('now()'));

async function insertOrFindLive(db: SqlHandle, slots: Slot[]): Promise<SlotRow[]> {
  try {
    // Binding, all or nothing, without a check of every input: each row the insert writes is
    // checked by the work item's foreign key at the end of the statement, and a slot the
    // conflict kept out is bound exactly when its live item has the input's environment (a
    // session is bound to one). Only a slot whose live item this statement cannot see (a
    // racing transaction committed it after the statement began) is looked up in `sessions`.
    // Any failure fails the whole statement, inserts included; the next attempt's statement
    // would be too late, since this one's inserts commit with it. A check of every input
    // against `sessions` repeated the foreign key's own probe: about a tenth of the statement.
    // Rows go in in key order, so two batches racing for the same slots wait on each other
    // in one direction and never deadlock.
    // The insert states every value `createdWork` assumes. It answers its new items in one
    // row: the client already holds the rest of each, and a row per item to parse cost more
    // than the insert. Live items are looked up only when the insert left a slot open (a
    // conflict, or a race the next statement settles), one index probe per slot.
    // The first branch names the columns of the UNION.
    return await rows<SlotRow>(
      db,
      sql`WITH input AS (
        SELECT * FROM jsonb_to_recordset(${JSON.stringify(slots)}::jsonb)
          AS i(id text, environment_id text, session_id text, kind text, metadata jsonb, trace_context jsonb)
      ), ins AS (
        INSERT INTO work_items (id, environment_id, session_id, kind, lane, state, data_type, claims,
                                metadata, trace_context, created_at)
        SELECT i.id, i.environment_id, i.session_id, i.kind, ${laneOf(sql`i.kind`, sql`i.environment_id`)},
               'queued', 'session', 0, coalesce(i.metadata, '{}'), i.trace_context, now()
          FROM input i
         ORDER BY i.session_id, i.kind
        ON CONFLICT (session_id, kind) WHERE state IN ${LIVE_STATES} DO NOTHING
        RETURNING id, environment_id, session_id, kind, lane
      )
      SELECT false AS created, NULL::int AS "createdCount", NULL::text AS "createdIds",
             NULL::text AS "insertedAt", NULL::bigint AS notified,
             ${WORK_COLUMNS}
        FROM input i LEFT JOIN LATERAL (
               -- OFFSET 0 keeps this a per-slot index probe, never a scan of every live item.
               SELECT * FROM work_items l
                WHERE l.session_id = i.session_id AND l.kind = i.kind AND l.state IN ${LIVE_STATES}
               OFFSET 0) w ON true
       WHERE (SELECT count(*) FROM ins) < (SELECT count(*) FROM input)
         AND NOT EXISTS (SELECT 1 FROM ins WHERE ins.session_id = i.session_id AND ins.kind = i.kind)
         -- CASE, not OR: it alone fixes the order of the tests, so only an unbound input raises.
         -- A slot left open but bound gives no row; the next statement sees its live item.
         AND CASE WHEN w.id IS NOT NULL AND w.environment_id = i.environment_id THEN true
                  WHEN w.id IS NULL AND EXISTS (
                    SELECT 1 FROM sessions s WHERE s.id = i.session_id AND s.environment_id = i.environment_id)
                  THEN false
                  ELSE leasehold_refuse_unbound(i.session_id, i.environment_id) END
      UNION ALL
      SELECT true, count(*)::int, string_agg(w.id, ' '), ${INSERTED_AT},
             count(CASE WHEN w.lane = 'poll' THEN ${NOTIFY_WORK} END),
             ${NO_WORK_COLUMNS}
        FROM ins w`,
    );
  } catch (err) {
    if (pgCode(err) !== PG_FOREIGN_KEY_VIOLATION) throw err;
    const slot = (await firstUnbound(db, slots)) ?? refusedSlot(slots, pgDetail(err)) ?? slots[0]!;
    throw new UnknownSessionError(slot.session_id, slot.environment_id, { cause: err });
  }
}

/**
 * The first slot, in input order, whose session is not bound to its environment; undefined
 * when none is (any more), or when the caller's transaction, aborted by the failed insert,
 * cannot ask: the error then names the input the database refused.
 */
async function firstUnbound(db: SqlHandle, slots: readonly Slot[]): Promise<Slot | undefined> {
  const keys = slots.map(({ session_id, environment_id }, slot) => ({ slot, session_id, environment_id }));
  try {
    const [row] = await rows<{ slot: number | null }>(
      db,
      sql`SELECT min(i.slot) AS slot
            FROM jsonb_to_recordset(${JSON.stringify(keys)}::jsonb) AS i(slot int, session_id text, environment_id text)
           WHERE NOT EXISTS (
             SELECT 1 FROM sessions s WHERE s.id = i.session_id AND s.environment_id = i.environment_id)`,
    );
    return row?.slot == null ? undefined : slots[row.slot];
  } catch {
    return undefined;
  }
}

/** The slot whose key a foreign key violation's DETAIL names, `Key (session_id, environment_id)=(…, …)`. */
function refusedSlot(slots: readonly Slot[], detail: string | undefined): Slot | undefined {
  if (detail === undefined) return undefined;
  return slots.find((s) => detail.includes(`(${s.session_id}, ${s.environment_id})`));
}

function toWork(row: SlotRow): SessionWork {
  const { created: _c, createdCount: _k, createdIds: _i, insertedAt: _t, notified: _n, ...work } = row;
  return work as SessionWork;
}
