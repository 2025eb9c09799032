import type { Database } from '../db/handle.js';
import { type CreateSessionInput, createSession, getSession, type Session } from '../sessions/index.js';
import { applyAll, type ClientEvent } from './post-events.js';

/**
 * Creates an API session and applies its initial events (user messages) in one transaction:
 * either the session exists with its first turn enqueued, or nothing was written. Returns the
 * session as it stands after them.
 */
export async function openSession(
  db: Database,
  input: CreateSessionInput,
  initial: ClientEvent[],
): Promise<Session> {
  return db.transaction(async (tx) => {
    const created = await createSession(tx, input);
    if (initial.length === 0) return created;
    const locked = (await getSession(tx, created.id, { lock: true }))!;
    await applyAll(tx, locked, initial);
    return (await getSession(tx, created.id))!;
  });
}
