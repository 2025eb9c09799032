/**
 * Test fixtures with defaults, so a test spells out only what matters, and the ways tests
 * move time: by backdating rows, never by sleeping.
 */
import { sql } from 'drizzle-orm';
import type { SqlHandle } from '../../src/db/handle.js';
import { maybeRow } from '../../src/db/handle.js';
import { newId } from '../../src/ids.js';
import { ts } from '../../src/queue/sql.js';
import type { Item, Timestamp, WorkState } from '../../src/queue/types.js';

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

/** Lapses a work item's lease or reservation (poll lane), as if its holder went silent. */
export async function lapseLease(db: SqlHandle, workId: string): Promise<void> {
  await db.execute(
    sql`UPDATE work_items SET lease_expires_at = now() - interval '1 second'
         WHERE id = ${workId} AND lease_expires_at IS NOT NULL`,
  );
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
