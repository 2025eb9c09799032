/**
 * Re-arming a session's tool calls. A `tool_exec` item carries every open call of its
 * session to the environment's worker; if it ends (stopped) while calls are still open, a
 * fresh item must carry them, and if it is handed out again (its worker died holding it) the
 * calls run again. Either way each open call counts one more delivery, and a call past
 * MAX_REARMS is answered with an error instead — with a `session.error` saying why — so a
 * tool that kills its worker every time cannot loop for ever.
 */
import type { Database } from '../db/handle.js';
import { enqueue } from '../queue/index.js';
import { answerCalls, appendEvents, countRearm, getSession, openCalls } from '../sessions/index.js';
import { enqueueTurn } from './enqueue-turn.js';
import { idle } from './post-events.js';
import { answerOf, errorResult } from './synthetic.js';

/** Deliveries of one call beyond its first before it is given up on. */
export const MAX_REARMS = 3;

export interface RearmOutcome {
  /** Open calls the session had. */
  open: number;
  /** Calls given up on (answered with an error) this time. */
  failed: number;
  /** Whether a fresh tool_exec item was enqueued for the rest. */
  enqueued: boolean;
}

/**
 * Counts a delivery for the session's open calls and acts on it, in one transaction under
 * the session's row lock. `ended`: the item that carried them stopped, so a fresh one is
 * enqueued for the calls still open. `redelivered`: the poll just handed the item out again,
 * so only the count and the give-up apply.
 */
export async function rearm(
  db: Database,
  sessionId: string,
  why: 'ended' | 'redelivered',
): Promise<RearmOutcome> {
  // Most items end with nothing open (the worker idles out after the turn): one index probe,
  // no transaction, no lock.
  if ((await openCalls(db, sessionId)).length === 0) return { open: 0, failed: 0, enqueued: false };
  return db.transaction(async (tx) => {
    const session = await getSession(tx, sessionId, { lock: true });
    if (!session || session.agent === null || session.status === 'terminated')
      return { open: 0, failed: 0, enqueued: false };
    if ((await openCalls(tx, sessionId)).length === 0) return { open: 0, failed: 0, enqueued: false };
    const counted = await countRearm(tx, sessionId);
    const spent = counted.filter((c) => c.rearms > MAX_REARMS);
    const left = counted.filter((c) => c.rearms <= MAX_REARMS);
    if (spent.length > 0) {
      const names = spent.map((c) => `${c.name} (${c.eventId})`).join(', ');
      const message = `gave up on ${names} after ${MAX_REARMS + 1} deliveries without an answer: the tool may be crashing its worker`;
      const results = spent.map((c) =>
        errorResult(c, `No answer after ${MAX_REARMS + 1} deliveries to a worker.`),
      );
      const stored = await appendEvents(tx, sessionId, [
        ...results,
        {
          type: 'session.error',
          body: { error: { type: 'unknown_error', message, retry_status: { type: 'terminal' } } },
        },
      ]);
      await answerCalls(
        tx,
        sessionId,
        spent.map((c, i) => ({ eventId: c.eventId, seq: stored![i]!.seq, answer: answerOf(stored![i]!) })),
      );
      if (left.length === 0) {
        await enqueueTurn(tx, session);
      } else {
        await appendEvents(
          tx,
          sessionId,
          [idle({ type: 'requires_action', event_ids: left.map((c) => c.eventId) })],
          {
            status: 'idle',
          },
        );
      }
    }
    let enqueued = false;
    if (why === 'ended' && left.length > 0) {
      const { created } = await enqueue(tx, {
        environmentId: session.environmentId,
        sessionId,
        kind: 'tool_exec',
        metadata: session.metadata,
      });
      enqueued = created;
    }
    return { open: counted.length, failed: spent.length, enqueued };
  });
}

/**
 * What a change to a `tool_exec` work item means for its session's calls: an item that
 * stopped re-arms them; one handed out again counts a delivery. Null when it means nothing.
 */
export function rearmFor(work: {
  kind: string;
  state: string;
  claims: number;
}): 'ended' | 'redelivered' | null {
  if (work.kind !== 'tool_exec') return null;
  if (work.state === 'stopped') return 'ended';
  if (work.state === 'queued' && work.claims > 1) return 'redelivered';
  return null;
}
