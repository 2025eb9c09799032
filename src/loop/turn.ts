/**
 * The brain's side of the loop: what a `model_turn` writes to its session when it starts and
 * when it settles. Both run in one transaction that takes the session's row lock first and
 * then proves the item's lease (the order every writer of a session keeps), so a turn whose
 * lease was lost — reclaimed, or stopped by an interrupt — writes nothing at all.
 */
import type { Database, SqlHandle } from '../db/handle.js';
import { assertLease, complete, enqueue, type Item } from '../queue/index.js';
import {
  answerCalls,
  appendEvents,
  getSession,
  listEvents,
  type NewEvent,
  recordCalls,
  type Session,
  type SessionEvent,
  type SessionStatus,
} from '../sessions/index.js';
import { enqueueTurn } from './enqueue-turn.js';
import { SessionNotFoundError } from './errors.js';
import { idle } from './post-events.js';
import { answerOf, errorResult, NOT_ENABLED } from './synthetic.js';

/**
 * Announces the turn: `session.status_running` (after `session.status_rescheduled` when the
 * item was taken over from a holder that lapsed). Returns the session, or null when it is
 * gone or has no agent (nothing for the brain to do).
 */
export async function startTurn(db: Database, item: Item): Promise<Session | null> {
  return db.transaction(async (tx) => {
    const session = await getSession(tx, item.sessionId, { lock: true });
    if (!session || session.agent === null) return null;
    await assertLease(tx, item);
    const events: NewEvent[] = [];
    if (item.reclaimed) events.push({ type: 'session.status_rescheduled', body: {} });
    if (item.reclaimed || session.status !== 'running')
      events.push({ type: 'session.status_running', body: {} });
    if (events.length > 0) await append(tx, session.id, events, 'running');
    return session;
  });
}

/** A content block of a model response, as far as the loop reads it. */
export interface ResponseBlock {
  type: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
}

/** What a turn produced, recorded in its journal commit and settled from there. */
export type TurnResult =
  | {
      kind: 'response';
      /** The last event the request was built from. */
      inputSeq: number;
      content: ResponseBlock[];
      stopReason: string | null;
      usage: Record<string, number>;
    }
  | {
      kind: 'error';
      inputSeq: number;
      error: { type: string; message: string; retry_status: { type: string } };
    };

/** How the brain judges one tool call of the agent (see src/turns/toolset.ts). */
export interface ToolJudge {
  isCustom(name: string): boolean;
  evaluate(name: string): {
    evaluated_permission: 'allow' | 'ask' | 'deny';
    evaluation?: Record<string, unknown>;
  };
}

/**
 * Writes what the turn produced and finishes its item, atomically: the agent's events (each
 * tagged with the turn, so the next request can put the response back whole), its tool calls
 * and the `tool_exec` item that carries them to the environment's worker, and the idle status.
 * When the session needs another turn at once — a user message arrived while this one ran
 * and no call is left open, or every call was refused here — the same transaction enqueues a
 * fresh `model_turn` once this one is complete: a new item is a new journal iteration, where
 * a requeued one (same id) would be taken for a takeover of this turn and replay it. With
 * calls open, the answer to the last of them starts the next turn, which sees the message.
 */
export async function settleTurn(
  db: Database,
  item: Item,
  turn: number,
  result: TurnResult,
  judge: ToolJudge,
): Promise<'completed' | 'chained'> {
  return db.transaction(async (tx) => {
    const session = await getSession(tx, item.sessionId, { lock: true });
    if (!session) throw new SessionNotFoundError(item.sessionId);
    await assertLease(tx, item);
    let next: 'open' | 'again' | 'done' = 'done';
    if (result.kind === 'error') {
      await append(
        tx,
        session.id,
        [{ type: 'session.error', body: { error: result.error }, turn }, idle({ type: 'retries_exhausted' })],
        'idle',
      );
    } else {
      next = await project(tx, session, turn, result, judge);
    }
    if (next === 'done' && (await messagedSince(tx, session.id, result.inputSeq))) next = 'again';
    await complete(tx, item);
    if (next === 'again') await enqueueTurn(tx, session);
    return next === 'again' ? 'chained' : 'completed';
  });
}

/**
 * Appends the response's events: `open` when calls now wait for the worker, `again` when
 * every call was refused here (the model must hear so at once), `done` when the turn ended.
 */
async function project(
  tx: SqlHandle,
  session: Session,
  turn: number,
  result: Extract<TurnResult, { kind: 'response' }>,
  judge: ToolJudge,
): Promise<'open' | 'again' | 'done'> {
  const events = agentEvents(result.content, turn, judge);
  const uses = events.filter((e) => e.type === 'agent.tool_use' || e.type === 'agent.custom_tool_use');
  const ending = uses.length === 0 ? [idle({ type: 'end_turn' })] : [];
  const stored = await append(tx, session.id, [...events, ...ending], 'idle', result.usage);
  if (uses.length === 0) return 'done';
  const calls = stored.filter((e) => e.type === 'agent.tool_use' || e.type === 'agent.custom_tool_use');
  const blocks = result.content.filter((b) => b.type === 'tool_use');
  await recordCalls(
    tx,
    session.id,
    calls.map((e, i) => ({
      eventId: e.id,
      modelToolUseId: String(blocks[i]!.id),
      custom: e.type === 'agent.custom_tool_use',
      name: String(e.body.name),
      requestedSeq: e.seq,
    })),
  );
  const refused = calls.filter((e) => e.body.evaluated_permission === 'deny');
  if (refused.length > 0) {
    const answers = await append(
      tx,
      session.id,
      refused.map((e) => errorResult({ eventId: e.id, custom: false }, NOT_ENABLED)),
    );
    await answerCalls(
      tx,
      session.id,
      answers.map((a, i) => ({ eventId: refused[i]!.id, seq: a.seq, answer: answerOf(a) })),
    );
  }
  const open = calls.filter((e) => e.body.evaluated_permission !== 'deny');
  if (open.length === 0) return 'again';
  await append(tx, session.id, [idle({ type: 'requires_action', event_ids: open.map((e) => e.id) })], 'idle');
  await enqueue(tx, {
    environmentId: session.environmentId,
    sessionId: session.id,
    kind: 'tool_exec',
    metadata: session.metadata,
  });
  return 'open';
}

/**
 * The public events of one response, in its order: consecutive text blocks make one
 * `agent.message`, a thinking block an `agent.thinking` (a progress signal: the thinking
 * itself stays in the journal), a tool_use block an `agent.tool_use` with the agent's
 * permission verdict, or an `agent.custom_tool_use` for a custom tool.
 */
export function agentEvents(content: ResponseBlock[], turn: number, judge: ToolJudge): NewEvent[] {
  const out: NewEvent[] = [];
  let text: Array<{ type: 'text'; text: string }> | null = null;
  for (const block of content) {
    if (block.type === 'text') {
      if (!text) {
        text = [];
        out.push({ type: 'agent.message', body: { content: text }, turn });
      }
      text.push({ type: 'text', text: block.text ?? '' });
      continue;
    }
    text = null;
    if (block.type === 'thinking' || block.type === 'redacted_thinking') {
      out.push({ type: 'agent.thinking', body: {}, turn });
    } else if (block.type === 'tool_use') {
      const name = String(block.name);
      out.push(
        judge.isCustom(name)
          ? { type: 'agent.custom_tool_use', body: { name, input: block.input ?? {} }, turn }
          : {
              type: 'agent.tool_use',
              body: { name, input: block.input ?? {}, ...judge.evaluate(name) },
              turn,
            },
      );
    }
  }
  return out;
}

async function messagedSince(tx: SqlHandle, sessionId: string, seq: number): Promise<boolean> {
  const later = await listEvents(tx, sessionId, {
    order: 'asc',
    afterSeq: seq,
    types: ['user.message'],
    fetch: 1,
  });
  return later.length > 0;
}

async function append(
  tx: SqlHandle,
  sessionId: string,
  events: NewEvent[],
  status?: SessionStatus,
  usage?: Record<string, number>,
): Promise<SessionEvent[]> {
  const stored = await appendEvents(tx, sessionId, events, { status, usage });
  if (!stored) throw new SessionNotFoundError(sessionId);
  return stored;
}
