/**
 * The database's own record of every change to `work_items`, for audits that must not take
 * the queue library's word for anything: a row trigger (installed on a fault test's database
 * only) appends each insert, update and delete, with its before and after values, to
 * `work_history`.
 *
 * - `at` is the writing transaction's `now()`: the instant the queue's own statements compare
 *   leases against (each queue write is one autocommit statement), so "the lease was live when
 *   this write happened" is `old_lease >= at`, judged on the database's clock.
 * - `seq` orders the changes of one row: writers of a row queue on its lock, and the trigger
 *   draws its number after the lock is held, so a row's history reads in `seq` order.
 * - A poll-lane re-hand-out changes the id; `old_id` → `new_id` links the row's attempts.
 */
import { sql } from 'drizzle-orm';
import type { SqlHandle } from '../../../src/db/handle.js';
import { rows } from '../../../src/db/handle.js';

/** Creates `work_history` and the trigger that fills it. Idempotent. */
export async function recordWorkHistory(db: SqlHandle): Promise<void> {
  await db.execute(
    sql.raw(`
    CREATE TABLE IF NOT EXISTS work_history (
      seq bigserial PRIMARY KEY,
      at timestamptz NOT NULL DEFAULT now(),
      op text NOT NULL,
      old_id text, new_id text, session_id text NOT NULL, kind text NOT NULL, lane text NOT NULL,
      old_state text, new_state text,
      old_lease timestamptz, new_lease timestamptz,
      old_heartbeat timestamptz, new_heartbeat timestamptz,
      old_claims int, new_claims int
    );
    CREATE OR REPLACE FUNCTION work_history_record() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        INSERT INTO work_history (op, new_id, session_id, kind, lane, new_state, new_lease, new_heartbeat, new_claims)
        VALUES ('I', NEW.id, NEW.session_id, NEW.kind, NEW.lane, NEW.state, NEW.lease_expires_at, NEW.last_heartbeat, NEW.claims);
      ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO work_history (op, old_id, new_id, session_id, kind, lane, old_state, new_state,
                                  old_lease, new_lease, old_heartbeat, new_heartbeat, old_claims, new_claims)
        VALUES ('U', OLD.id, NEW.id, NEW.session_id, NEW.kind, NEW.lane, OLD.state, NEW.state,
                OLD.lease_expires_at, NEW.lease_expires_at, OLD.last_heartbeat, NEW.last_heartbeat, OLD.claims, NEW.claims);
      ELSE
        INSERT INTO work_history (op, old_id, session_id, kind, lane, old_state, old_lease, old_heartbeat, old_claims)
        VALUES ('D', OLD.id, OLD.session_id, OLD.kind, OLD.lane, OLD.state, OLD.lease_expires_at, OLD.last_heartbeat, OLD.claims);
      END IF;
      RETURN NULL;
    END $$;
    DROP TRIGGER IF EXISTS work_history_record ON work_items;
    CREATE TRIGGER work_history_record AFTER INSERT OR UPDATE OR DELETE ON work_items
      FOR EACH ROW EXECUTE FUNCTION work_history_record();
  `),
  );
}

/** A re-hand-out of a poll-lane item: the attempt it replaced and when, on the database's clock. */
export interface Rehandout {
  oldId: string;
  newId: string;
  /** The replaced attempt's lease (its last heartbeat + ttl), exactly as stored. */
  oldLease: string;
  oldHeartbeat: string | null;
  /** The transaction time of the poll that re-handed it out. */
  at: string;
  /** at − old lease, ms: how long after the lease ended the item was offered again (< 0 = early). */
  delayMs: number;
  /** old lease − old heartbeat, ms: the ttl the replaced attempt's last heartbeat installed. */
  ttlMs: number | null;
}

/** The re-hand-outs of the attempt `workId` (at most one is possible: the id is retired). */
export function rehandoutsOf(db: SqlHandle, workId: string): Promise<Rehandout[]> {
  return rows<Rehandout>(
    db,
    sql`SELECT old_id AS "oldId", new_id AS "newId", old_lease::text AS "oldLease",
               old_heartbeat::text AS "oldHeartbeat", at::text AS at,
               (extract(epoch FROM at - old_lease) * 1000)::float8 AS "delayMs",
               (extract(epoch FROM old_lease - old_heartbeat) * 1000)::float8 AS "ttlMs"
          FROM work_history
         WHERE op = 'U' AND old_id = ${workId} AND new_id <> old_id
         ORDER BY seq`,
  );
}
