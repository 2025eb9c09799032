/**
 * Fixtures for the session loop: an API session (an agent snapshot, like POST /v1/sessions
 * stores) in a self_hosted environment, and readers of its log and tool calls.
 */
import { sql } from 'drizzle-orm';
import type { Database, SqlHandle } from '../../src/db/handle.js';
import { rows } from '../../src/db/handle.js';
import { newId } from '../../src/ids.js';
import { type ResponseBlock, settleTurn, startTurn, type ToolJudge } from '../../src/loop/index.js';
import { claim } from '../../src/queue/index.js';
import { allCalls, createSession, listEvents, type SessionEvent } from '../../src/sessions/index.js';
import { createEnvironment, type EnvironmentKind } from './factories.js';

/** The agent snapshot a test session runs: the built-in toolset and one custom tool. */
export function testAgent(
  overrides: Record<string, unknown> = {},
): Record<string, unknown> & { id: string; version: number } {
  return {
    type: 'agent',
    id: newId('agent'),
    version: 1,
    name: 'test agent',
    description: null,
    model: { id: 'claude-test', speed: 'standard' },
    system: 'You are a test.',
    tools: [
      {
        type: 'agent_toolset_20260401',
        default_config: { enabled: true, permission_policy: { type: 'always_allow' } },
        configs: [],
      },
      {
        type: 'custom',
        name: 'lookup',
        description: 'Looks a word up.',
        input_schema: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
      },
    ],
    mcp_servers: [],
    skills: [],
    multiagent: null,
    execution_identity: { type: 'service_account' },
    ...overrides,
  } as Record<string, unknown> & { id: string; version: number };
}

/** An API session in a fresh environment of `kind`, with `metadata`. */
export async function apiSession(
  db: SqlHandle,
  options: { kind?: EnvironmentKind; metadata?: Record<string, string>; environmentId?: string } = {},
): Promise<{ environmentId: string; sessionId: string }> {
  const environmentId = options.environmentId ?? (await createEnvironment(db, options.kind ?? 'self_hosted'));
  const session = await createSession(db, {
    id: newId('sess'),
    environmentId,
    agent: testAgent(),
    title: null,
    metadata: options.metadata ?? {},
    resources: [],
  });
  return { environmentId, sessionId: session.id };
}

/** The whole log, in order. */
export function eventsOf(db: SqlHandle, sessionId: string): Promise<SessionEvent[]> {
  return listEvents(db, sessionId, { order: 'asc', fetch: 100_000 });
}

/** The session's work items as (kind, state, lane), oldest first. */
export function workOf(
  db: SqlHandle,
  sessionId: string,
): Promise<
  Array<{ id: string; kind: string; state: string; lane: string; metadata: Record<string, string> }>
> {
  return rows(
    db,
    sql`SELECT id, kind, state, lane, metadata FROM work_items WHERE session_id = ${sessionId} ORDER BY created_at, id`,
  );
}

/**
 * How the tests' brain judges tools: `lookup` is the custom tool; `write` asks; `web_search`
 * is refused here; every other tool is allowed.
 */
export const testJudge: ToolJudge = {
  isCustom: (name) => name === 'lookup',
  evaluate: (name) =>
    name === 'web_search'
      ? { evaluated_permission: 'deny' }
      : { evaluated_permission: name === 'write' ? 'ask' : 'allow', evaluation: { type: 'always_allow' } },
};

/** A model response's tool_use block. */
export const toolUse = (id: string, name: string, input: Record<string, unknown> = {}): ResponseBlock => ({
  type: 'tool_use',
  id,
  name,
  input,
});

/**
 * Runs the session's queued `model_turn` as the brain does — claims it, starts it and settles
 * it with `content` (its tool_use blocks become the session's calls) — and returns how it
 * settled. Throws when the claim lane hands out another session's turn, or none.
 */
export async function runTurn(
  db: Database,
  sessionId: string,
  content: ResponseBlock[],
  turn = 0,
): Promise<'completed' | 'chained'> {
  const item = await claim(db, 'model_turn', 60_000);
  if (item?.sessionId !== sessionId)
    throw new Error(`runTurn: the claim lane handed out ${item?.sessionId ?? 'nothing'}, not ${sessionId}`);
  await startTurn(db, item);
  const log = await eventsOf(db, sessionId);
  return settleTurn(
    db,
    item,
    turn,
    {
      kind: 'response',
      inputSeq: log.at(-1)!.seq,
      content,
      stopReason: content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn',
      usage: { input_tokens: 10, output_tokens: 5 },
    },
    testJudge,
  );
}

/**
 * Everything a post to the session could write — its row, its log, its tool calls and its
 * work items — as one comparable value, for "nothing was written" checks.
 */
export async function sessionState(db: SqlHandle, sessionId: string): Promise<unknown> {
  const [row] = await rows(
    db,
    sql`SELECT status, title, metadata, usage, last_seq, last_event_at::text, updated_at::text, archived_at::text
          FROM sessions WHERE id = ${sessionId}`,
  );
  const work = await rows(
    db,
    sql`SELECT id, kind, state, lane, metadata, claims, updated_at::text FROM work_items
         WHERE session_id = ${sessionId} ORDER BY created_at, id`,
  );
  return { row: row ?? null, log: await eventsOf(db, sessionId), calls: await allCalls(db, sessionId), work };
}
