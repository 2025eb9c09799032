/**
 * SQL fragments every queue statement shares: the projections, the wire scope and the claim
 * lane's predicates and the lease holder's (the time rendering is `db/time.ts`). Each operation writes its own statement out whole in its own file; only what
 * must be identical everywhere lives here.
 */
import type { Placeholder } from 'drizzle-orm';
import { type SQL, sql } from 'drizzle-orm';
import { instantOf } from '../db/instant.js';
import { interval, ts } from '../db/time.js';

/** The `Work` projection's columns, one per field of `Work`, in its order. */
const WORK_FIELDS = [
  'w.id',
  'w.environment_id AS "environmentId"',
  'w.data_type AS "dataType"',
  'w.session_id AS "sessionId"',
  'w.healthcheck_id AS "healthcheckId"',
  'w.kind',
  'w.state',
  'w.metadata',
  `${ts('w.created_at')} AS "createdAt"`,
  `${ts('w.acknowledged_at')} AS "acknowledgedAt"`,
  `${ts('w.started_at')} AS "startedAt"`,
  `${ts('w.last_heartbeat')} AS "lastHeartbeat"`,
  `${ts('w.stop_requested_at')} AS "stopRequestedAt"`,
  `${ts('w.stopped_at')} AS "stoppedAt"`,
  `${ts('w.lease_expires_at')} AS "leaseExpiresAt"`,
  'w.claims',
  'w.trace_context AS "traceContext"',
];

/** The `Work` projection of `work_items w`, aliased to the TypeScript field names. */
export const WORK_COLUMNS = sql.raw(WORK_FIELDS.join(', '));

/** As many NULLs as `WORK_COLUMNS` has columns: a UNION branch that carries no item. */
export const NO_WORK_COLUMNS = sql.raw(WORK_FIELDS.map(() => 'NULL').join(', '));

/**
 * The `Item` projection of `work_items w` after a claim (`reclaimed` is added per statement).
 * `session_id` is never NULL here: only session items are on the claim lane.
 */
export const ITEM_COLUMNS = sql.raw(`w.id, w.environment_id AS "environmentId", w.session_id AS "sessionId",
  w.kind, ${ts('w.lease_expires_at')} AS lease, w.claims, w.metadata, w.trace_context AS "traceContext"`);

/**
 * The wire scope: what the work API may see by id. Only the poll lane (a tool_exec item of a
 * self_hosted environment: a session's, or a healthcheck) of the caller's own environment;
 * anything else must look exactly like a missing item.
 */
export function wireScope(environmentId: string | Placeholder, workId: string | Placeholder): SQL {
  return sql`w.id = ${workId} AND w.environment_id = ${environmentId} AND w.lane = 'poll'`;
}

/**
 * `wireScope` for a batch: the rows of `work_items w` named by `b (id, env)`, rows of the CTE
 * `input`, each seen only by its own environment. `id = ANY(…)` keeps a prepared statement's
 * plan on the primary key however few or many the batch holds.
 */
export function wireScopeOf(input: string): SQL {
  return sql.raw(`w.id = ANY (ARRAY(SELECT id FROM ${input})) AND w.id = b.id AND w.environment_id = b.env
           AND w.lane = 'poll'`);
}

/**
 * The holder's predicate on a fixed statement's placeholders: the item `id`, still active, its
 * lease the very instant the holder's proof names (`local` at `offset` minutes, db/instant.ts).
 * Every single-item write of a lease holder fences on it.
 */
export const HELD = sql`id = ${sql.placeholder('id')} AND state = 'active'
           AND lease_expires_at = ${instantOf(sql.placeholder('local'), sql.placeholder('offset'))}`;

/** Whether the item's session has a tool call without an answer (an index probe, session_tool_calls_open_idx). */
export const CALLS_OPEN = sql.raw(`EXISTS (SELECT 1 FROM session_tool_calls c
  WHERE c.session_id = w.session_id AND c.answered_seq IS NULL) AS "callsOpen"`);

/** The live states: they hold the (session, kind) slot. */
export const LIVE_STATES = sql.raw(`('queued', 'starting', 'active')`);

/**
 * A single hand-out's LIMIT, written into the statement: as a parameter, a generic plan
 * guesses a tenth of the table for it and hashes all of work_items to update one row.
 */
const ONE = sql.raw('1');

/**
 * Both lanes' hand-out order as CTEs ending in `picked (<picks>)`: the `limit` oldest (by
 * `created_at`) rows of two candidate sets, `queued` (free queued items) and `lapsed` (held
 * items whose lease lapsed: the holder died), each read with `columns` and locked with
 * `SKIP LOCKED`.
 *
 * Why two scans and not one `queued OR lapsed`: an index over both states holds every item in
 * flight, and oldest-first they sit ahead of every queued item, so each hand-out stepped past
 * all of them, reading each from the table to find its lease unexpired — its cost grew with
 * the work in flight. Queued items have an index of their own, and held ones one ordered by
 * lease, whose lapsed part is usually empty. Each set gives its `limit` oldest and the oldest
 * of both win. A row locked here but not picked stays locked (other takers skip it) until
 * the statement's transaction ends; that happens only while some lease has lapsed, which is
 * rare.
 */
function pickOldest(
  columns: SQL,
  picks: SQL,
  queued: SQL,
  lapsed: SQL,
  limit: number | Placeholder,
  pickLimit?: SQL,
): SQL {
  const count = limit === 1 ? ONE : sql`${limit}`;
  return sql`queued AS (
        SELECT ${columns} FROM work_items WHERE ${queued}
         ORDER BY created_at
         LIMIT ${count}
         FOR UPDATE SKIP LOCKED
      ), lapsed AS (
        SELECT ${columns} FROM work_items WHERE ${lapsed}
         ORDER BY created_at
         LIMIT ${count}
         FOR UPDATE SKIP LOCKED
      ), picked AS (
        SELECT ${picks} FROM (SELECT * FROM queued UNION ALL SELECT * FROM lapsed) c
         ORDER BY created_at
         LIMIT ${pickLimit ?? count}
      )`;
}

/**
 * The claim lane's hand-out order, ending in `picked (id, state)`: the `limit` oldest
 * available items of `kind` (work_items_claim_queued_idx, work_items_claim_lease_idx).
 * Available means queued, or active with a lapsed lease (the claim reclaims it). `also`
 * narrows both candidate sets further (a step that must wait for its completion reads it
 * there). `take`, an expression the statement computes, hands out fewer than `limit` (a
 * batch of steps leases one item per completion it made); each scan still reads at most
 * `limit` rows, a bound the planner knows. Shared by every statement that hands out
 * claim-lane items, so they can never disagree on what may be taken or in which order.
 */
export function pickClaimable(
  kind: string | Placeholder,
  limit: number | Placeholder,
  also: SQL = sql``,
  take?: SQL,
): SQL {
  return pickOldest(
    sql`id, state, created_at`,
    sql`id, state`,
    sql`lane = 'claim' AND kind = ${kind} AND state = 'queued' ${also}`,
    sql`lane = 'claim' AND kind = ${kind} AND state = 'active' AND lease_expires_at < now() ${also}`,
    limit,
    take,
  );
}

/**
 * The poll lane's hand-out order, ending in `picked (id, first)`: the `limit` oldest available
 * items of the environment (work_items_poll_queued_idx, work_items_poll_lease_idx). Available means
 * queued and never reserved, or reserved before `now() + reservedBefore` (the poll's own
 * reclaim window: see poll.ts), or starting/active with a lapsed lease. `first`: never
 * handed out before (no reservation, no lease).
 */
export function pickPollable(
  environmentId: string | Placeholder,
  reservedBefore: SQL,
  limit: number | Placeholder = 1,
): SQL {
  return pickOldest(
    sql`id, created_at, lease_expires_at IS NULL AS first`,
    sql`id, first`,
    sql`environment_id = ${environmentId} AND lane = 'poll' AND state = 'queued'
         AND (lease_expires_at IS NULL OR lease_expires_at < now() + ${reservedBefore})`,
    sql`environment_id = ${environmentId} AND lane = 'poll' AND state IN ('starting', 'active')
         AND lease_expires_at < now()`,
    limit,
  );
}

/**
 * The SET list of a poll-lane hand-out to `w`, but for its id (see `poll`): a fresh queued
 * reservation of `reservationMs`, with the ack, start and heartbeat stamps of any earlier
 * holder cleared, one more claim.
 */
export function reservedFor(reservationMs: number): SQL {
  return sql`state = 'queued', last_heartbeat = NULL, heartbeats = 0, acknowledged_at = NULL, started_at = NULL,
             lease_expires_at = now() + ${interval(reservationMs)}, updated_at = now(), claims = w.claims + 1`;
}

/** The SET list of a claim-lane hand-out to `w`: a fresh lease of `ttlMs`, one more claim. */
export function claimedFor(ttlMs: number | Placeholder): SQL {
  return sql`state = 'active', lease_expires_at = now() + ${interval(ttlMs)}, updated_at = now(),
               claims = w.claims + 1`;
}

/**
 * `claimed`: the hand-out of every row in `picked` (pickClaimable) for `ttlMs`, answering the
 * item's columns, whether it was reclaimed, and `created_at` to order the batch by (UPDATE …
 * RETURNING has no order of its own). `id = ANY(…)` reaches the picked rows through the
 * primary key even on a generic plan, whose guess for a batch's LIMIT (a tenth of the table)
 * would otherwise hash all of work_items.
 */
export function claimedBatch(ttlMs: number | Placeholder): SQL {
  return sql`claimed AS (
        UPDATE work_items w
           SET ${claimedFor(ttlMs)}
          FROM picked
         WHERE w.id = ANY (ARRAY(SELECT id FROM picked)) AND w.id = picked.id
        RETURNING ${ITEM_COLUMNS}, picked.state = 'active' AS reclaimed, w.created_at
      )`;
}

/**
 * A new item's lane: the poll lane's only for a tool_exec on a self-hosted environment. The
 * environment is read in a sub-select that PostgreSQL evaluates only when the kind is
 * tool_exec, so every other kind's insert never looks at it (the foreign keys check that it
 * exists anyway). An unknown environment gives the claim lane, and the session's key then
 * refuses the row.
 */
export function laneOf(kind: SQL | Placeholder | string, environmentId: SQL | Placeholder | string): SQL {
  return sql`CASE WHEN ${kind} = 'tool_exec'
                   AND (SELECT e.kind FROM environments e WHERE e.id = ${environmentId}) = 'self_hosted'
                  THEN 'poll' ELSE 'claim' END`;
}
