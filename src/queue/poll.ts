import { type Placeholder, type SQL, sql } from 'drizzle-orm';
import { fixedSql } from '../db/fixed-sql.js';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { interval } from '../db/time.js';
import { newId } from '../ids.js';
import { recordHandOut, withSpan } from '../telemetry/tracing.js';
import { recordPollCtes } from './record-poll.js';
import { pickPollable, reservedFor, WORK_COLUMNS } from './sql.js';
import type { Work } from './types.js';

/** Abandoned wind-downs a single poll finalizes at most; the rest drain on later polls. */
export const FINALIZE_BATCH = 50;

/**
 * The reclaim window of a poll that names none, and the width every reservation is stamped
 * with: a queued item's `lease_expires_at` is its hand-out time plus this. Stamping one fixed
 * width (rather than the poller's own window) keeps the hand-out time recoverable, so each
 * later poll can apply its own window to it, and keeps `pending` meaning "handed out within
 * the default window" whatever windows the workers use.
 */
export const DEFAULT_RECLAIM_MS = 5_000;

/**
 * Hands the oldest available item of the environment's poll lane to a worker, reserving it,
 * or returns null. The item stays `queued`: the reservation only keeps other polls off it
 * until the worker acks, and one older than a later poll's window is re-offered.
 *
 * `reclaimMs` is this poll's own window (the SDK's "reclaim unacknowledged work items older
 * than this"): a queued item handed out more than `reclaimMs` before this poll is available
 * to it, whatever window the poll that reserved it used. Since the reservation is stamped as
 * hand-out + DEFAULT_RECLAIM_MS, "handed out before now − reclaimMs" reads
 * `lease_expires_at < now() + (DEFAULT_RECLAIM_MS − reclaimMs)`.
 *
 * Available means: queued and never reserved, or reserved longer ago than `reclaimMs`; or
 * starting/active with a lapsed lease (the worker died; its own lease, not the window,
 * decides) — reset to a fresh queued reservation with its ack, start and heartbeat stamps
 * cleared, indistinguishable from a never-run item.
 *
 * Every re-hand-out mints a fresh id (the reference's #62): the wire's lifecycle calls carry
 * no ownership proof, so under the old id a revived stale worker's stop or heartbeat would
 * land on whichever worker holds the item next. Under a rotated id they are 404s and the
 * replacement is untouched. The first hand-out keeps the enqueue id — nobody held it yet, and
 * a client that listed the item can still address it. Metadata, trace context and
 * created_at carry over.
 *
 * The order is `pickPollable`'s, the claim lane's two scans per environment: a poll never
 * steps past the environment's items in flight, however many workers hold one.
 *
 * The same statement finalizes up to FINALIZE_BATCH abandoned wind-downs of the environment
 * (stopping, lease lapsed or absent): never re-offered, settled `stopped`. A data-modifying
 * CTE runs whether or not anything is picked; SKIP LOCKED keeps concurrent polls from
 * blocking each other; no ORDER BY, since every such row is equally abandoned.
 *
 * With `recordWorker` the same statement also records that worker's poll (`recordPoll`'s
 * writes), so a worker's telemetry costs no statement of its own; a failure then fails the
 * whole statement, and the caller retries without it.
 *
 * A handed-out item with a trace context records `queue.hand_out` in the enqueuing trace
 * (`recordHandOut`); the worker gets the same context in the poll response's headers.
 */
export function poll(
  db: SqlHandle,
  environmentId: string,
  reclaimMs: number,
  recordWorker?: string,
): Promise<Work | null> {
  return withSpan('queue.poll', { 'environment.id': environmentId }, async (span) => {
    const values = { environmentId, reservedBefore: DEFAULT_RECLAIM_MS - reclaimMs, fresh: newId('work') };
    const work = await maybeRow<Work>(
      db,
      recordWorker === undefined
        ? POLL(values)
        : pollStatement(sql`${recordPollCtes(environmentId, recordWorker)},`, values),
    );
    if (work) {
      const attributes = { 'work.id': work.id, 'environment.id': environmentId, 'work.kind': work.kind };
      span.setAttributes({ ...attributes, 'work.claims': work.claims });
      recordHandOut(work.traceContext, attributes);
    }
    return work;
  });
}

/** The poll, after `recorded` (a poll's worker record, or nothing): values, or placeholders for them. */
function pollStatement(
  recorded: SQL,
  v: {
    environmentId: string | Placeholder;
    reservedBefore: number | Placeholder;
    fresh: string | Placeholder;
  },
): SQL {
  return sql`WITH ${recorded} ${finalizeAbandonedCte(v.environmentId)}, ${pickPollable(v.environmentId, interval(v.reservedBefore))}
      UPDATE work_items w
         SET id = CASE WHEN picked.first THEN w.id ELSE ${v.fresh} END, ${reservedFor(DEFAULT_RECLAIM_MS)}
        FROM picked
       WHERE w.id = picked.id
      RETURNING ${WORK_COLUMNS}`;
}

/**
 * The poll that records no worker (most polls: a worker's record is due now and then), rendered
 * once (fixed-sql.ts): built per call, its text cost more of a poll's JavaScript than the rest.
 */
const POLL = fixedSql<'environmentId' | 'reservedBefore' | 'fresh'>(
  pollStatement(sql``, {
    environmentId: sql.placeholder('environmentId'),
    reservedBefore: sql.placeholder('reservedBefore'),
    fresh: sql.placeholder('fresh'),
  }),
);

/**
 * The CTE `finalized`: up to FINALIZE_BATCH abandoned wind-downs of the environment settled
 * `stopped` (see `poll`). Shared by every statement that hands out poll-lane items.
 */
export function finalizeAbandonedCte(environmentId: string | Placeholder): SQL {
  return sql`finalized AS (
        UPDATE work_items
           SET state = 'stopped', stopped_at = now(), lease_expires_at = NULL, updated_at = now()
         WHERE id IN (
           SELECT id FROM work_items
            WHERE environment_id = ${environmentId} AND state = 'stopping' AND lane = 'poll'
              AND (lease_expires_at IS NULL OR lease_expires_at < now())
            LIMIT ${FINALIZE_BATCH}
            FOR UPDATE SKIP LOCKED)
        RETURNING 1
      )`;
}
