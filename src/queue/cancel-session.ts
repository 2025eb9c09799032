import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { withSpan } from '../telemetry/tracing.js';

/**
 * Stops every item the session still has in flight — all kinds, all states but stopped —
 * inside the caller's transaction; what a user interrupt does to the turn it ends. It takes
 * no lease proof because it is not a holder finishing its own work: it takes the work away
 * from whoever holds it, and each holder then fails its next proof-carrying write with
 * `LeaseLostError` (a worker's echo heartbeat answers `stopped`, not extended). It frees the
 * live slots, so the same transaction can enqueue the redirect turn. Returns how many items
 * it stopped.
 */
export function cancelSession(db: SqlHandle, sessionId: string): Promise<number> {
  return withSpan('queue.cancel_session', { 'session.id': sessionId }, async () => {
    const row = await maybeRow<{ n: number }>(
      db,
      sql`WITH done AS (
        UPDATE work_items
           SET state = 'stopped', stop_requested_at = coalesce(stop_requested_at, now()),
               stopped_at = now(), lease_expires_at = NULL, updated_at = now()
         WHERE session_id = ${sessionId} AND state <> 'stopped'
        RETURNING 1
      )
      SELECT count(*)::int AS n FROM done`,
    );
    return row?.n ?? 0;
  });
}
