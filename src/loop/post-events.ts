/**
 * Events a client posts to a session, and what each one sets off — in the transaction that
 * appends it, under the session's row lock, so an event and its consequences commit together
 * or not at all:
 *
 * - `user.message` → the session's `model_turn` (idempotent on the live slot: a turn that is
 *   running finds the message at its settlement and chains itself). Calls still unanswered
 *   are answered with an error first: the next request must pair every tool_use.
 * - `user.interrupt` → every live item of the session stopped; unanswered calls answered
 *   with an error; the session idle.
 * - `user.tool_confirmation` → `deny` answers the call with an error; `allow` only records it
 *   (the worker runs the call when it sees it).
 * - `user.tool_result` / `user.custom_tool_result` → the call answered; the last answer
 *   enqueues the next `model_turn`, an earlier one re-announces `requires_action` with the
 *   calls that remain. The same answer again is accepted and writes nothing; a different
 *   answer to an answered call is refused.
 */
import type { Database, SqlHandle } from '../db/handle.js';
import { cancelSession } from '../queue/index.js';
import {
  answerCalls,
  appendEvents,
  findCall,
  getSession,
  listEvents,
  type NewEvent,
  openCalls,
  type Session,
  type SessionEvent,
  type ToolCall,
} from '../sessions/index.js';
import { enqueueTurn } from './enqueue-turn.js';
import { EventForbiddenError, EventRefusedError, SessionNotFoundError } from './errors.js';
import { answerOf, DENIED, errorResult, INTERRUPTED, SUPERSEDED } from './synthetic.js';

/** An event as a client sends it: `type` and the event's own fields. */
export type ClientEvent = { type: string } & Record<string, unknown>;

/** Who posts: an API key (a user or the platform) or the session's environment key (its worker). */
export type Poster = { kind: 'api' } | { kind: 'environment'; environmentId: string };

/** What an environment key may post (decision: a worker answers calls, nothing else). */
export const WORKER_EVENT_TYPES = new Set([
  'user.tool_result',
  'user.custom_tool_result',
  'user.tool_confirmation',
]);

/**
 * Appends `events` in order with their consequences and returns the events as stored (a
 * repeated answer returns the event that first answered the call).
 */
export async function postEvents(
  db: Database,
  sessionId: string,
  events: ClientEvent[],
  poster: Poster,
): Promise<SessionEvent[]> {
  if (poster.kind === 'environment') {
    const refused = events.find((e) => !WORKER_EVENT_TYPES.has(e.type));
    if (refused) {
      throw new EventForbiddenError(
        `an environment key may post only ${[...WORKER_EVENT_TYPES].join(', ')}; not ${refused.type}`,
      );
    }
  }
  return db.transaction(async (tx) => {
    const session = await getSession(tx, sessionId, { lock: true });
    if (!session || (poster.kind === 'environment' && session.environmentId !== poster.environmentId)) {
      throw new SessionNotFoundError(sessionId);
    }
    if (session.agent === null) {
      throw new EventRefusedError(
        'this session was opened by the platform lane: its brain is the platform’s own',
      );
    }
    if (session.status === 'terminated') throw new EventRefusedError('the session is terminated');
    if (session.archivedAt !== null) throw new EventRefusedError('the session is archived');
    return applyAll(tx, session, events);
  });
}

/** Applies events in order to a session whose row lock the caller's transaction holds. */
export async function applyAll(
  tx: SqlHandle,
  session: Session,
  events: ClientEvent[],
): Promise<SessionEvent[]> {
  const out: SessionEvent[] = [];
  for (const event of events) out.push(await apply(tx, session, event));
  return out;
}

async function apply(tx: SqlHandle, session: Session, event: ClientEvent): Promise<SessionEvent> {
  const { type, ...body } = event;
  switch (type) {
    case 'user.message':
      return message(tx, session, { type, body });
    case 'user.interrupt':
      return interrupt(tx, session, { type, body });
    case 'user.tool_confirmation':
      return confirmation(tx, session, { type, body });
    case 'user.tool_result':
    case 'user.custom_tool_result':
      return result(tx, session, { type, body });
    default:
      throw new EventRefusedError(`events of type ${type} cannot be sent to a session here`);
  }
}

async function message(tx: SqlHandle, session: Session, event: NewEvent): Promise<SessionEvent> {
  await answerOpenCalls(tx, session, SUPERSEDED);
  const [stored] = await append(tx, session, [event]);
  await enqueueTurn(tx, session);
  return stored!;
}

async function interrupt(tx: SqlHandle, session: Session, event: NewEvent): Promise<SessionEvent> {
  await cancelSession(tx, session.id);
  await answerOpenCalls(tx, session, INTERRUPTED);
  const [stored] = await append(tx, session, [event]);
  if (session.status !== 'idle') {
    await append(tx, session, [idle({ type: 'end_turn' })], 'idle');
  }
  return stored!;
}

async function confirmation(tx: SqlHandle, session: Session, event: NewEvent): Promise<SessionEvent> {
  const id = String(event.body.tool_use_id);
  // A confirmation sent again (a client retrying a send it never saw answered) is the one
  // already recorded; a different verdict on a call already judged is refused.
  const earlier = await confirmationOf(tx, session, id);
  if (earlier) {
    if (earlier.body.result === event.body.result) return earlier;
    throw new EventRefusedError(`tool call ${id} is already confirmed with ${String(earlier.body.result)}`);
  }
  const call = await openCall(tx, session, id, null);
  const [stored] = await append(tx, session, [event]);
  if (event.body.result === 'deny') {
    const reason =
      typeof event.body.deny_message === 'string' && event.body.deny_message
        ? event.body.deny_message
        : DENIED;
    await answer(tx, session, [errorResult(call, reason)]);
  }
  return stored!;
}

async function result(tx: SqlHandle, session: Session, event: NewEvent): Promise<SessionEvent> {
  const custom = event.type === 'user.custom_tool_result';
  const id = String(custom ? event.body.custom_tool_use_id : event.body.tool_use_id);
  const call = await findCall(tx, session.id, id);
  if (!call || call.custom !== custom) {
    throw new EventRefusedError(
      `no ${custom ? 'agent.custom_tool_use' : 'agent.tool_use'} ${id} in this session`,
    );
  }
  if (call.answeredSeq !== null) {
    // The worker's runner retries a send whose answer it never saw: the same answer is a
    // success that writes nothing; a different one is refused (400, which it does not retry).
    if (sameAnswer(call.answer, answerOf(event))) return answeredBy(tx, session, call);
    throw new EventRefusedError(`tool call ${id} is already answered with a different result`);
  }
  const [stored] = await answer(tx, session, [event]);
  return stored!;
}

/**
 * Appends answers, marks their calls answered, then either enqueues the next turn (nothing
 * left open) or re-announces `requires_action` with the calls that remain.
 */
async function answer(tx: SqlHandle, session: Session, results: NewEvent[]): Promise<SessionEvent[]> {
  const stored = await append(tx, session, results);
  await answerCalls(
    tx,
    session.id,
    stored.map((e) => ({
      eventId: String(e.type === 'user.custom_tool_result' ? e.body.custom_tool_use_id : e.body.tool_use_id),
      seq: e.seq,
      answer: answerOf(e),
    })),
  );
  const open = await openCalls(tx, session.id);
  if (open.length === 0) await enqueueTurn(tx, session);
  else
    await append(
      tx,
      session,
      [idle({ type: 'requires_action', event_ids: open.map((c) => c.eventId) })],
      'idle',
    );
  return stored;
}

/** Answers every open call with an error saying `why` (no turn is enqueued for them). */
async function answerOpenCalls(tx: SqlHandle, session: Session, why: string): Promise<void> {
  const open = await openCalls(tx, session.id);
  if (open.length === 0) return;
  const stored = await append(
    tx,
    session,
    open.map((c) => errorResult(c, why)),
  );
  await answerCalls(
    tx,
    session.id,
    stored.map((e, i) => ({ eventId: open[i]!.eventId, seq: e.seq, answer: answerOf(e) })),
  );
}

/** The confirmation recorded for a call, if any (a session has few: they are read by type). */
async function confirmationOf(
  tx: SqlHandle,
  session: Session,
  toolUseId: string,
): Promise<SessionEvent | null> {
  const confirmations = await listEvents(tx, session.id, {
    order: 'asc',
    types: ['user.tool_confirmation'],
    fetch: Number.MAX_SAFE_INTEGER,
  });
  return confirmations.find((e) => e.body.tool_use_id === toolUseId) ?? null;
}

async function openCall(
  tx: SqlHandle,
  session: Session,
  id: string,
  custom: boolean | null,
): Promise<ToolCall> {
  const call = await findCall(tx, session.id, id);
  if (!call || (custom !== null && call.custom !== custom))
    throw new EventRefusedError(`no tool call ${id} in this session`);
  if (call.answeredSeq !== null) throw new EventRefusedError(`tool call ${id} is already answered`);
  return call;
}

async function answeredBy(tx: SqlHandle, session: Session, call: ToolCall): Promise<SessionEvent> {
  const [event] = await listEvents(tx, session.id, {
    order: 'asc',
    afterSeq: call.answeredSeq! - 1,
    fetch: 1,
  });
  return event!;
}

async function append(
  tx: SqlHandle,
  session: Session,
  events: NewEvent[],
  status?: Session['status'],
): Promise<SessionEvent[]> {
  const stored = await appendEvents(tx, session.id, events, status ? { status } : {});
  if (!stored) throw new SessionNotFoundError(session.id);
  return stored;
}

/** A `session.status_idle` event with the stop reason given. */
export function idle(stopReason: Record<string, unknown>): NewEvent {
  return { type: 'session.status_idle', body: { stop_reason: stopReason, stop_details: null } };
}

function sameAnswer(a: ToolCall['answer'], b: ToolCall['answer']): boolean {
  return canonical(a) === canonical(b);
}

/** JSON with object keys sorted: jsonb does not keep the order a client sent. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([x], [y]) => x.localeCompare(y)),
        )
      : v,
  );
}
