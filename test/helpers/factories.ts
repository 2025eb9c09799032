/**
 * Test fixtures with defaults, so a test spells out only what matters, and the ways tests
 * move time: by backdating rows, never by sleeping.
 */
import { sql } from 'drizzle-orm';
import type { SqlHandle } from '../../src/db/handle.js';
import { maybeRow, rows } from '../../src/db/handle.js';
import { ts } from '../../src/db/time.js';
import { newId } from '../../src/ids.js';
import { ack } from '../../src/queue/ack.js';
import { claim } from '../../src/queue/claim.js';
import { enqueue } from '../../src/queue/enqueue.js';
import { heartbeat } from '../../src/queue/heartbeat.js';
import { poll } from '../../src/queue/poll.js';
import { WORK_COLUMNS } from '../../src/queue/sql.js';
import { stop } from '../../src/queue/stop.js';
import {
  type Item,
  NO_HEARTBEAT,
  type Timestamp,
  type TraceContext,
  type Work,
  type WorkKind,
  type WorkState,
} from '../../src/queue/types.js';

export type EnvironmentKind = 'cloud' | 'self_hosted';

export async function createEnvironment(
  db: SqlHandle,
  kind: EnvironmentKind = 'self_hosted',
): Promise<string> {
  const id = newId('env');
  await db.execute(
    sql`INSERT INTO environments (id, kind, name, config)
        VALUES (${id}, ${kind}, ${`test ${kind}`}, ${JSON.stringify({ type: kind })}::jsonb)`,
  );
  return id;
}

let sessions = 0;
export async function createSession(db: SqlHandle, environmentId: string): Promise<string> {
  const id = `sesn_test${++sessions}_${Math.random().toString(36).slice(2, 8)}`;
  await db.execute(sql`INSERT INTO sessions (id, environment_id) VALUES (${id}, ${environmentId})`);
  return id;
}

/** An environment of `kind` with one session. */
export async function setupSession(
  db: SqlHandle,
  kind: EnvironmentKind = 'self_hosted',
): Promise<{ environmentId: string; sessionId: string }> {
  const environmentId = await createEnvironment(db, kind);
  return { environmentId, sessionId: await createSession(db, environmentId) };
}

/**
 * Moves a held lease `ms` into the past, as if that much time had passed, and hands the
 * holder the moved value (its proof is still valid; only the clock moved).
 */
export async function backdateLease(db: SqlHandle, item: Item, ms: number): Promise<void> {
  const row = await maybeRow<{ lease: Timestamp }>(
    db,
    sql`UPDATE work_items SET lease_expires_at = lease_expires_at - ${ms} * interval '1 millisecond'
         WHERE id = ${item.id} RETURNING ${sql.raw(ts('lease_expires_at'))} AS lease`,
  );
  if (!row) throw new Error(`backdateLease: no item ${item.id}`);
  item.lease = row.lease;
}

/**
 * Lapses a work item's lease or reservation (poll lane), as if its holder went silent. A poll
 * reservation is judged by each later poll's own window (up to 600 s), so a queued item is
 * made to look handed out longer ago than any window allows.
 */
export async function lapseLease(db: SqlHandle, workId: string): Promise<void> {
  await db.execute(
    sql`UPDATE work_items
           SET lease_expires_at = now() - CASE WHEN state = 'queued' THEN interval '700 seconds'
                                               ELSE interval '1 second' END
         WHERE id = ${workId} AND lease_expires_at IS NOT NULL`,
  );
}

/** Moves a queued item's hand-out `ms` into the past (its reservation and its updated_at alike). */
export async function ageReservation(db: SqlHandle, workId: string, ms: number): Promise<void> {
  const moved = await rows(
    db,
    sql`UPDATE work_items
           SET lease_expires_at = lease_expires_at - ${ms}::double precision * interval '1 millisecond',
               updated_at = updated_at - ${ms}::double precision * interval '1 millisecond'
         WHERE id = ${workId} AND state = 'queued' AND lease_expires_at IS NOT NULL
     RETURNING id`,
  );
  if (moved.length !== 1) throw new Error(`ageReservation: no reserved item ${workId}`);
}

export interface RawWork {
  id: string;
  state: WorkState;
  lease: Timestamp | null;
  lastHeartbeat: Timestamp | null;
  stoppedAt: Timestamp | null;
  stopRequestedAt: Timestamp | null;
  claims: number;
  metadata: Record<string, string>;
  traceContext: Record<string, string> | null;
}

/** The row as stored, bypassing every scope, or null. */
export async function readWork(db: SqlHandle, workId: string): Promise<RawWork | null> {
  return maybeRow<RawWork>(
    db,
    sql`SELECT id, state, ${sql.raw(ts('lease_expires_at'))} AS lease, ${sql.raw(ts('last_heartbeat'))} AS "lastHeartbeat",
               ${sql.raw(ts('stopped_at'))} AS "stoppedAt", ${sql.raw(ts('stop_requested_at'))} AS "stopRequestedAt",
               claims, metadata, trace_context AS "traceContext"
          FROM work_items WHERE id = ${workId}`,
  );
}

/** An item as every queue read projects it (`WORK_COLUMNS`), to compare an answer against the row. */
export async function readStoredWork(db: SqlHandle, workId: string): Promise<Work | null> {
  return maybeRow<Work>(db, sql`SELECT ${WORK_COLUMNS} FROM work_items w WHERE w.id = ${workId}`);
}

/** Counts rows matching a state (all items when absent). */
export async function countWork(db: SqlHandle, state?: WorkState): Promise<number> {
  const row = await maybeRow<{ n: number }>(
    db,
    state
      ? sql`SELECT count(*)::int AS n FROM work_items WHERE state = ${state}`
      : sql`SELECT count(*)::int AS n FROM work_items`,
  );
  return row?.n ?? 0;
}

// ---------------------------------------------------------------------------------------------
// Poll-lane (wire) fixtures.
// ---------------------------------------------------------------------------------------------

/** The lifecycle points `wireWork` can leave an item at. */
export type WireStage = 'queued' | 'reserved' | 'starting' | 'active' | 'stopping' | 'stopped';

/**
 * Enqueues a tool_exec item for the session and drives it through the wire operations to
 * `stage`: `queued` (never polled), `reserved` (polled, not acked), `starting` (acked),
 * `active` (first heartbeat), `stopping` (graceful stop of the active item) or `stopped`
 * (force stop of the active item). The item must be the environment's only available one.
 * Returns its id and the heartbeat value a worker would echo next (null before `active`).
 */
export async function wireWork(
  db: SqlHandle,
  target: { environmentId: string; sessionId: string },
  stage: WireStage,
  options: { metadata?: Record<string, string>; traceContext?: TraceContext | null } = {},
): Promise<{ id: string; lastHeartbeat: Timestamp | null }> {
  const { work } = await enqueue(db, { ...target, kind: 'tool_exec', ...options });
  if (stage === 'queued') return { id: work.id, lastHeartbeat: null };
  const polled = await poll(db, target.environmentId, 60_000);
  if (polled?.id !== work.id) throw new Error(`wireWork: poll handed out ${polled?.id}, not ${work.id}`);
  if (stage === 'reserved') return { id: work.id, lastHeartbeat: null };
  await ack(db, target.environmentId, work.id);
  if (stage === 'starting') return { id: work.id, lastHeartbeat: null };
  const hb = await heartbeat(db, target.environmentId, work.id, NO_HEARTBEAT, 30);
  if (stage !== 'active') await stop(db, target.environmentId, work.id, stage === 'stopped');
  return { id: work.id, lastHeartbeat: hb.lastHeartbeat };
}

/**
 * Inserts `count` items straight into work_items (lane derived from the environment as
 * enqueue does), for states and backlogs the operations would take many calls to build.
 * Stopping and stopped rows share the session freely: only live states hold its slot.
 * `leaseInMs`: the lease relative to now (negative = lapsed); absent or null = no lease.
 */
export async function insertWork(
  db: SqlHandle,
  target: { environmentId: string; sessionId: string },
  options: { kind?: WorkKind; state?: WorkState; leaseInMs?: number | null; count?: number } = {},
): Promise<string[]> {
  const ids = Array.from({ length: options.count ?? 1 }, () => newId('work'));
  const kind = options.kind ?? 'tool_exec';
  const state = options.state ?? 'queued';
  const lease = options.leaseInMs ?? null;
  await db.execute(
    sql`INSERT INTO work_items (id, environment_id, session_id, kind, lane, state, lease_expires_at,
                                stop_requested_at, stopped_at)
        SELECT i.id, e.id, ${target.sessionId}, ${kind},
               CASE WHEN ${kind} = 'tool_exec' AND e.kind = 'self_hosted' THEN 'poll' ELSE 'claim' END,
               ${state},
               CASE WHEN ${lease}::double precision IS NULL THEN NULL
                    ELSE now() + ${lease}::double precision * interval '1 millisecond' END,
               CASE WHEN ${state} IN ('stopping', 'stopped') THEN now() END,
               CASE WHEN ${state} = 'stopped' THEN now() END
          FROM jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb) AS i(id), environments e
         WHERE e.id = ${target.environmentId}`,
  );
  return ids;
}

/** The window a lease or reservation was granted for: lease_expires_at − updated_at, in ms. */
export async function leaseWindowMs(db: SqlHandle, workId: string): Promise<number | null> {
  const row = await maybeRow<{ ms: number | null }>(
    db,
    sql`SELECT (extract(epoch FROM lease_expires_at - updated_at) * 1000)::double precision AS ms
          FROM work_items WHERE id = ${workId}`,
  );
  if (!row) throw new Error(`leaseWindowMs: no item ${workId}`);
  return row.ms;
}

/**
 * Orders two wire timestamps as instants, in the database (a JS Date would drop their
 * microseconds, and the trimmed rendering does not sort as text): -1, 0 or 1.
 */
export async function compareTimestamps(db: SqlHandle, a: Timestamp, b: Timestamp): Promise<-1 | 0 | 1> {
  const row = await maybeRow<{ c: -1 | 0 | 1 }>(
    db,
    sql`SELECT CASE WHEN ${a}::timestamptz < ${b}::timestamptz THEN -1
                    WHEN ${a}::timestamptz = ${b}::timestamptz THEN 0 ELSE 1 END AS c`,
  );
  return row!.c;
}

/** Sets an item's created_at (any timestamptz literal), to fix the order of a test's items. */
export async function setCreatedAt(db: SqlHandle, workId: string, createdAt: string): Promise<void> {
  await db.execute(sql`UPDATE work_items SET created_at = ${createdAt}::timestamptz WHERE id = ${workId}`);
}

/** Moves a worker's last poll `ms` into the past, as if it had gone quiet that long ago. */
export async function agePoll(
  db: SqlHandle,
  environmentId: string,
  workerId: string,
  ms: number,
): Promise<void> {
  await db.execute(
    sql`UPDATE worker_polls SET last_polled_at = now() - ${ms}::double precision * interval '1 millisecond'
         WHERE environment_id = ${environmentId} AND worker_id = ${workerId}`,
  );
}

/** The worker ids with a worker_polls row in the environment, sorted. */
export async function pollers(db: SqlHandle, environmentId: string): Promise<string[]> {
  const result = (await db.execute(
    sql`SELECT worker_id AS "workerId" FROM worker_polls WHERE environment_id = ${environmentId} ORDER BY worker_id`,
  )) as { rows: { workerId: string }[] };
  return result.rows.map((r) => r.workerId);
}

/**
 * A backlog of `n` queued claim-lane items of `kind` in a fresh cloud environment, one
 * session each, oldest first (a microsecond apart), written in two statements so contention
 * tests start from thousands of items without thousands of enqueues.
 */
export async function seedClaimBacklog(db: SqlHandle, n: number, kind: WorkKind): Promise<string> {
  return (await seedBacklog(db, n, kind)).environmentId;
}

/** `seedClaimBacklog`'s items, by id, oldest first. */
export async function seedClaimItems(db: SqlHandle, n: number, kind: WorkKind): Promise<string[]> {
  return (await seedBacklog(db, n, kind)).ids;
}

/** `n` queued tool_exec items of a fresh self_hosted environment's poll lane, oldest first. */
export async function seedPollItems(
  db: SqlHandle,
  n: number,
): Promise<{ environmentId: string; ids: string[] }> {
  return seedBacklog(db, n, 'tool_exec', 'poll');
}

async function seedBacklog(db: SqlHandle, n: number, kind: WorkKind, lane: 'claim' | 'poll' = 'claim') {
  const environmentId = await createEnvironment(db, lane === 'poll' ? 'self_hosted' : 'cloud');
  const tag = environmentId.slice(-8);
  // Ids in the minted shape (16 random characters, then the row number as 8 digits), so the
  // HTTP routes, which check an id's shape, take them too.
  const workPrefix = newId('work').slice(0, -8);
  await db.execute(
    sql`INSERT INTO sessions (id, environment_id)
        SELECT ${`sesn_${tag}_`} || g, ${environmentId} FROM generate_series(1, ${n}) g`,
  );
  await db.execute(
    sql`INSERT INTO work_items (id, environment_id, session_id, kind, lane, created_at)
        SELECT ${workPrefix} || lpad(g::text, 8, '0'), ${environmentId}, ${`sesn_${tag}_`} || g, ${kind}, ${lane},
               now() - (${n} - g) * interval '1 microsecond'
          FROM generate_series(1, ${n}) g`,
  );
  const ids = Array.from({ length: n }, (_, i) => `${workPrefix}${String(i + 1).padStart(8, '0')}`);
  return { environmentId, ids };
}

/** `n` items of `kind` enqueued one by one in a fresh cloud environment; their ids, oldest first. */
export async function enqueueClaimItems(db: SqlHandle, n: number, kind: WorkKind): Promise<string[]> {
  const { environmentId } = await setupSession(db, 'cloud');
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const sessionId = await createSession(db, environmentId);
    ids.push((await enqueue(db, { environmentId, sessionId, kind })).work.id);
  }
  return ids;
}

/** `n` claims of `kind` in a row, each leased for a minute: the holders, oldest item first. */
export async function claimHolders(db: SqlHandle, kind: WorkKind, n: number): Promise<Item[]> {
  const held: Item[] = [];
  for (let i = 0; i < n; i++) {
    const item = await claim(db, kind, 60_000);
    if (!item) throw new Error(`claimHolders: only ${i} of ${n} ${kind} items to claim`);
    held.push(item);
  }
  return held;
}

/** Each of `lost` lapses and is claimed again by another claimer: its holder's proof is stale. */
export async function loseLeases(db: SqlHandle, lost: readonly Item[], kind: WorkKind): Promise<void> {
  for (const h of lost) await backdateLease(db, h, 120_000);
  for (const _ of lost) await claim(db, kind, 60_000);
}
