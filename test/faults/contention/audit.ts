/**
 * The contention test's independent audit: plain SQL over what the clients saw and what the
 * database recorded, never the queue library's own answers.
 *
 * Inputs, copied into one schema per audit so a corrupted copy can be audited the same way:
 * - `units`: every acknowledged enqueue — one unit of work per (session, kind);
 * - `outcomes`: every holder write a client made — its item id, the proof it presented (the
 *   claim lane's lease and claim count; on the wire the id is the attempt's token), and
 *   whether it was accepted, refused or left ambiguous;
 * - `history`: the database's record of every change (`history.ts`);
 * - `items`: the rows as they ended.
 *
 * Classes, after Jepsen's total-queue checker, with completion standing for dequeue:
 * - lost: a unit with no accepted completion, or whose row did not end `stopped`;
 * - duplicated: a unit with more than one accepted completion, or finished twice in history;
 * - unexpected: an accepted completion of an id no unit ever had, or a finish in history that
 *   no client was told it made;
 * - recovered: a unit handed out again after its holder lost the lease, then finished once.
 * And the fence: unfenced = an accepted completion not matched by a finish that consumed the
 * very proof the client presented while that lease was live (`old_lease >= at`); overlapping =
 * a hand-out that took an item whose previous lease or reservation was still live.
 */
import { sql } from 'drizzle-orm';
import type { SqlHandle } from '../../../src/db/handle.js';
import { maybeRow } from '../../../src/db/handle.js';

export type Lane = 'claim' | 'platform' | 'wire';

export interface Unit {
  sessionId: string;
  kind: string;
}

export interface Outcome {
  lane: Lane;
  worker: string;
  call: 'complete' | 'stop' | 'extend' | 'heartbeat' | 'ack';
  workId: string;
  /** The claim lane's lease proof as received (exact text); null on the wire. */
  proof: string | null;
  /** The claim count of the hand-out the holder got; null on the wire. */
  claims: number | null;
  outcome: 'accepted' | 'refused' | 'ambiguous';
  /** HTTP status, or 409 for the library's LeaseLostError; null when ambiguous. */
  status: number | null;
  /** Made by a holder whose lease the test took away. */
  stale: boolean;
}

export interface AuditCounts {
  lost: number;
  duplicated: number;
  unexpected: number;
  recovered: number;
  unfenced: number;
  overlapping: number;
  ambiguous: number;
  handouts: number;
  finishes: number;
}

const CHUNK = 2_000;

/** Copies the client records, the history and the final rows into schema `schema` (fresh). */
export async function snapshot(
  db: SqlHandle,
  schema: string,
  units: readonly Unit[],
  outcomes: readonly Outcome[],
): Promise<void> {
  const s = sql.raw(schema);
  await db.execute(sql`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  await db.execute(sql`CREATE SCHEMA ${s}`);
  await db.execute(sql`CREATE TABLE ${s}.units (session_id text, kind text)`);
  await db.execute(
    sql`CREATE TABLE ${s}.outcomes (lane text, worker text, call text, work_id text, proof timestamptz,
                                   claims int, outcome text, status int, stale boolean)`,
  );
  await db.execute(sql`CREATE TABLE ${s}.history AS TABLE work_history`);
  await db.execute(sql`CREATE TABLE ${s}.items AS SELECT id, session_id, kind, lane, state FROM work_items`);
  for (let i = 0; i < units.length; i += CHUNK) {
    await db.execute(
      sql`INSERT INTO ${s}.units SELECT * FROM jsonb_to_recordset(${JSON.stringify(units.slice(i, i + CHUNK))}::jsonb)
            AS u("sessionId" text, kind text)`,
    );
  }
  for (let i = 0; i < outcomes.length; i += CHUNK) {
    await db.execute(
      sql`INSERT INTO ${s}.outcomes
          SELECT lane, worker, call, "workId", proof::timestamptz, claims, outcome, status, stale
            FROM jsonb_to_recordset(${JSON.stringify(outcomes.slice(i, i + CHUNK))}::jsonb)
              AS o(lane text, worker text, call text, "workId" text, proof text, claims int, outcome text,
                   status int, stale boolean)`,
    );
  }
}

/** Runs the audit over the tables of `schema`; every count but recovered/handouts/finishes must be 0. */
export async function audit(db: SqlHandle, schema: string): Promise<AuditCounts> {
  const s = sql.raw(schema);
  const row = await maybeRow<AuditCounts>(
    db,
    sql`WITH ids AS (
      SELECT DISTINCT new_id AS id, session_id, kind FROM ${s}.history WHERE new_id IS NOT NULL
    ), accepted AS (
      SELECT o.*, ids.session_id AS u_session, ids.kind AS u_kind
        FROM ${s}.outcomes o LEFT JOIN ids ON ids.id = o.work_id
       WHERE o.outcome = 'accepted' AND o.call IN ('complete', 'stop')
    ), finishes AS (
      SELECT * FROM ${s}.history WHERE op = 'U' AND new_state = 'stopped' AND old_state <> 'stopped'
    ), handouts AS (
      SELECT * FROM ${s}.history WHERE op = 'U' AND new_claims = old_claims + 1
    ), per_unit AS (
      SELECT u.session_id, u.kind, coalesce(a.n, 0) AS accepted, coalesce(f.n, 0) AS finishes,
             coalesce(i.n, 0) AS stopped_rows, coalesce(h.n, 0) AS handouts
        FROM ${s}.units u
        LEFT JOIN (SELECT u_session, u_kind, count(*) AS n FROM accepted GROUP BY 1, 2) a
               ON a.u_session = u.session_id AND a.u_kind = u.kind
        LEFT JOIN (SELECT session_id, kind, count(*) AS n FROM finishes GROUP BY 1, 2) f
               ON f.session_id = u.session_id AND f.kind = u.kind
        LEFT JOIN (SELECT session_id, kind, count(*) AS n FROM ${s}.items WHERE state = 'stopped' GROUP BY 1, 2) i
               ON i.session_id = u.session_id AND i.kind = u.kind
        LEFT JOIN (SELECT session_id, kind, count(*) AS n FROM handouts GROUP BY 1, 2) h
               ON h.session_id = u.session_id AND h.kind = u.kind
    )
    SELECT
      (SELECT count(*) FROM per_unit WHERE accepted = 0 OR stopped_rows = 0)::int AS lost,
      (SELECT count(*) FROM per_unit WHERE accepted > 1 OR finishes > 1)::int AS duplicated,
      ((SELECT count(*) FROM accepted a
         WHERE NOT EXISTS (SELECT 1 FROM ${s}.units u WHERE u.session_id = a.u_session AND u.kind = a.u_kind))
       + (SELECT count(*) FROM finishes f
           WHERE NOT EXISTS (SELECT 1 FROM accepted a WHERE a.work_id = f.old_id)))::int AS unexpected,
      (SELECT count(*) FROM per_unit WHERE handouts > 1 AND accepted = 1 AND finishes = 1)::int AS recovered,
      (SELECT count(*) FROM accepted a
        WHERE NOT EXISTS (
          SELECT 1 FROM finishes f
           WHERE f.old_id = a.work_id AND f.old_state IN ('starting', 'active') AND f.old_lease >= f.at
             AND (a.proof IS NULL OR f.old_lease = a.proof)
             AND (a.claims IS NULL OR f.old_claims = a.claims)))::int AS unfenced,
      (SELECT count(*) FROM handouts WHERE old_lease >= at)::int AS overlapping,
      (SELECT count(*) FROM ${s}.outcomes WHERE outcome = 'ambiguous')::int AS ambiguous,
      (SELECT coalesce(sum(handouts), 0) FROM per_unit)::int AS handouts,
      (SELECT count(*) FROM finishes)::int AS finishes`,
  );
  return row!;
}

/** What `corruptCopy` plants: the counts the audit must report for the corrupted copy. */
export const PLANTED = { lost: 1, duplicated: 1, unexpected: 2, unfenced: 3, overlapping: 1 } as const;

/**
 * The negative control: a copy of `from` with violations of each class planted on distinct
 * units, so a run can show its audit would have caught them. `PLANTED` counts them: the lost
 * completion also leaves a finish no client was told of (a second unexpected), and the ghost
 * completion consumed no lease (a third unfenced). Needs a recovered claim-lane unit (a lease
 * was lost) and completions of every lane in `from`.
 */
export async function corruptCopy(db: SqlHandle, from: string, to: string): Promise<void> {
  const [f, t] = [sql.raw(from), sql.raw(to)];
  await db.execute(sql`DROP SCHEMA IF EXISTS ${t} CASCADE`);
  await db.execute(sql`CREATE SCHEMA ${t}`);
  for (const table of ['units', 'outcomes', 'history', 'items']) {
    await db.execute(sql`CREATE TABLE ${t}.${sql.raw(table)} AS TABLE ${f}.${sql.raw(table)}`);
  }
  const accepted = sql`outcome = 'accepted' AND call IN ('complete', 'stop')`;
  // lost: a claim-lane completion the client was never told about, its row left active.
  await db.execute(
    sql`WITH victim AS (SELECT work_id FROM ${t}.outcomes WHERE ${accepted} AND lane = 'claim' AND claims = 1 LIMIT 1),
             gone AS (DELETE FROM ${t}.outcomes o USING victim WHERE o.work_id = victim.work_id RETURNING 1)
        UPDATE ${t}.items SET state = 'active' WHERE id = (SELECT work_id FROM victim)`,
  );
  // duplicated: a platform completion accepted twice.
  await db.execute(
    sql`INSERT INTO ${t}.outcomes SELECT * FROM ${t}.outcomes WHERE ${accepted} AND lane = 'platform' LIMIT 1`,
  );
  // unexpected: a completion of an id nobody enqueued.
  await db.execute(
    sql`INSERT INTO ${t}.outcomes (lane, worker, call, work_id, outcome, status, stale)
        VALUES ('wire', 'ghost', 'stop', 'work_0000000000000000000000zz', 'accepted', 200, false)`,
  );
  // unfenced: a wire completion the database took after that attempt's lease had lapsed.
  await db.execute(
    sql`UPDATE ${t}.history SET old_lease = at - interval '1 millisecond'
         WHERE seq = (SELECT h.seq FROM ${t}.history h JOIN ${t}.outcomes o ON o.work_id = h.old_id
                       WHERE o.lane = 'wire' AND o.outcome = 'accepted' AND o.call = 'stop'
                         AND h.new_state = 'stopped' LIMIT 1)`,
  );
  // unfenced: a claim-lane completion accepted from the holder before the one that finished it
  // (pg-boss #925: a stale handler's complete landing on the newer attempt).
  await db.execute(
    sql`UPDATE ${t}.outcomes SET claims = claims - 1
         WHERE ctid = (SELECT ctid FROM ${t}.outcomes WHERE ${accepted} AND lane = 'claim' AND claims > 1 LIMIT 1)`,
  );
  // overlapping: a reclaim that took an item whose lease was still live.
  await db.execute(
    sql`UPDATE ${t}.history SET old_lease = at + interval '1 second'
         WHERE seq = (SELECT seq FROM ${t}.history
                       WHERE op = 'U' AND new_claims = old_claims + 1 AND old_state = 'active' LIMIT 1)`,
  );
}
