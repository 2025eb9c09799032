import { sql } from 'drizzle-orm';
import type { SqlHandle } from '../db/handle.js';
import { enqueue } from '../queue/index.js';
import type { Session } from '../sessions/index.js';

/**
 * The channel a new `model_turn` of a session notifies (payload: the session id), so a brain
 * waiting for work wakes at once instead of polling the claim lane. Only the loop's own
 * enqueues notify: the platform lane's claim-lane enqueues stay free of the commit-time lock
 * NOTIFY takes.
 */
export const TURN_CHANNEL = 'leasehold_turns';

/** Enqueues the session's next turn (idempotent on the live slot) and, when new, wakes the brains. */
export async function enqueueTurn(
  tx: SqlHandle,
  session: Pick<Session, 'id' | 'environmentId' | 'metadata'>,
): Promise<void> {
  const { created } = await enqueue(tx, {
    environmentId: session.environmentId,
    sessionId: session.id,
    kind: 'model_turn',
    metadata: session.metadata,
  });
  if (created) await tx.execute(sql`SELECT pg_notify(${TURN_CHANNEL}, ${session.id})`);
}
