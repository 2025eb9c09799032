/**
 * The sessions API in process (`/v1/sessions`): create, retrieve, list, update, archive and
 * delete, on a real PostgreSQL. Agents are made through the agents API, environments and
 * platform-lane sessions with the factories; everything under test goes through HTTP.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { issueEnvironmentKey } from '../../src/auth/credentials.js';
import { rows } from '../../src/db/handle.js';
import { apiKey } from '../helpers/api.js';
import { useTestDb } from '../helpers/db.js';
import { createEnvironment, createSession as platformSession } from '../helpers/factories.js';
import { type Admin, asAdmin, expectError, micros, UNKNOWN_ENV, WIRE_STAMP } from '../helpers/management.js';
import { eventsOf, runTurn, toolUse, workOf } from '../helpers/sessions.js';

type Json = Record<string, unknown>;
interface WireSession extends Json {
  id: string;
  agent: Json & { id: string; version: number };
  environment_id: string;
  status: string;
  title: string | null;
  metadata: Record<string, string>;
  archived_at: string | null;
  created_at: string;
  updated_at: string;
}
interface Page {
  data: WireSession[];
  next_page: string | null;
  prev_page: string | null;
}

const LOOKUP = {
  type: 'custom',
  name: 'lookup',
  description: 'Looks a word up.',
  input_schema: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
};
const AGENT = {
  name: 'coder',
  model: 'claude-opus-4-8',
  system: 'version one',
  tools: [{ type: 'agent_toolset_20260401' }, LOOKUP],
  metadata: { team: 'infra' },
};
const message = (text: string) => ({ type: 'user.message', content: [{ type: 'text', text }] });
/** A well-formed session id that names nothing. */
const UNKNOWN_SESSION = 'sess_0000000000000000000000zz';
const UNKNOWN_AGENT = 'agent_0000000000000000000000zz';

/** The agent's wire form as a session snapshots it: no metadata, no agent-level timestamps. */
function snapshotOf(agent: Json): Json {
  const { metadata: _m, archived_at: _a, created_at: _c, updated_at: _u, ...rest } = agent;
  return rest;
}

describe('the sessions API', () => {
  const t = useTestDb('pg');

  interface Fixture extends Admin {
    environmentId: string;
    agent: Json & { id: string; version: number };
    create(body?: Json, status?: number): Promise<WireSession>;
  }

  async function fixture(): Promise<Fixture> {
    const admin = await asAdmin(t.db);
    const environmentId = await createEnvironment(t.db, 'self_hosted');
    const agent = await admin.ok<Json & { id: string; version: number }>('POST', '/v1/agents', AGENT);
    return {
      ...admin,
      environmentId,
      agent,
      create: (body = {}, status = 200) =>
        admin.ok<WireSession>(
          'POST',
          '/v1/sessions',
          { agent: agent.id, environment_id: environmentId, ...body },
          status,
        ),
    };
  }

  async function count(table: 'sessions' | 'session_events' | 'work_items' | 'session_tool_calls') {
    const [row] = await rows<{ n: number }>(t.db, sql`SELECT count(*)::int AS n FROM ${sql.raw(table)}`);
    return row!.n;
  }

  /** Rows of every table a session owns, for one session. */
  async function owned(sessionId: string) {
    const [row] = await rows<{ events: number; calls: number; work: number; sessions: number }>(
      t.db,
      sql`SELECT (SELECT count(*)::int FROM session_events WHERE session_id = ${sessionId}) AS events,
                 (SELECT count(*)::int FROM session_tool_calls WHERE session_id = ${sessionId}) AS calls,
                 (SELECT count(*)::int FROM work_items WHERE session_id = ${sessionId}) AS work,
                 (SELECT count(*)::int FROM sessions WHERE id = ${sessionId}) AS sessions`,
    );
    return row!;
  }

  /** Status, error type and message of an error answer (the request id differs per request). */
  async function answer(res: Response) {
    const text = await res.text();
    const body = text ? (JSON.parse(text) as { error?: { type: string; message: string } }) : null;
    return { status: res.status, type: body?.error?.type, message: body?.error?.message };
  }

  describe('POST /v1/sessions', () => {
    it('an agent id makes an idle session of its newest version, in the SDK session shape', async () => {
      const f = await fixture();
      const v2 = await f.ok<Json>('POST', `/v1/agents/${f.agent.id}`, { version: 1, system: 'version two' });
      expect(v2.version).toBe(2);
      const session = await f.create();
      expect(session).toEqual({
        type: 'session',
        id: expect.stringMatching(/^sess_[0-9a-z]{24}$/),
        agent: snapshotOf(v2),
        environment_id: f.environmentId,
        status: 'idle',
        title: null,
        metadata: {},
        resources: [],
        budget: null,
        vault_ids: [],
        outcome_evaluations: [],
        stats: { active_seconds: 0, duration_seconds: expect.any(Number) },
        usage: {
          input_tokens: 0,
          output_tokens: 0,
          cache_read_input_tokens: 0,
          cache_creation: { ephemeral_1h_input_tokens: 0, ephemeral_5m_input_tokens: 0 },
          active_seconds: 0,
        },
        archived_at: null,
        created_at: expect.stringMatching(WIRE_STAMP),
        updated_at: expect.stringMatching(WIRE_STAMP),
      });
      expect(session.agent).toMatchObject({
        type: 'agent',
        id: f.agent.id,
        version: 2,
        system: 'version two',
      });
      expect(await f.ok('GET', `/v1/sessions/${session.id}`)).toEqual({
        ...session,
        stats: expect.any(Object),
      });
      // Nothing was sent, so nothing happens: an empty log and no work.
      expect(await owned(session.id)).toEqual({ events: 0, calls: 0, work: 0, sessions: 1 });
    });

    it('{type:"agent", id, version} snapshots exactly that version, and later agent updates never reach the session', async () => {
      const f = await fixture();
      const v1 = f.agent;
      await f.ok('POST', `/v1/agents/${v1.id}`, { version: 1, system: 'version two', tools: [] });
      const pinned = await f.create({ agent: { type: 'agent', id: v1.id, version: 1 } });
      expect(pinned.agent).toEqual(snapshotOf(v1));
      const newest = await f.create({ agent: { type: 'agent', id: v1.id } });
      expect(newest.agent).toMatchObject({ version: 2, system: 'version two', tools: [] });

      const v3 = await f.ok<Json>('POST', `/v1/agents/${v1.id}`, {
        version: 2,
        system: 'version three',
        name: 'renamed',
      });
      expect(v3.version).toBe(3);
      expect((await f.ok<WireSession>('GET', `/v1/sessions/${pinned.id}`)).agent).toEqual(snapshotOf(v1));
      expect((await f.ok<WireSession>('GET', `/v1/sessions/${newest.id}`)).agent).toEqual(newest.agent);
    });

    it('a platform API key may create one too', async () => {
      const f = await fixture();
      const platform = await apiKey(t.db, 'platform');
      const res = await f.api.call('POST', '/v1/sessions', {
        key: platform,
        body: { agent: f.agent.id, environment_id: f.environmentId },
      });
      expect(res.status, await res.clone().text()).toBe(200);
    });

    it('title and metadata are stored within their limits; beyond them a 400 names the problem and nothing is written', async () => {
      const f = await fixture();
      const sixteen = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, `v${i}`]));
      const full = await f.create({ title: 't'.repeat(512), metadata: sixteen });
      expect(full).toMatchObject({ title: 't'.repeat(512), metadata: sixteen });
      const edge = await f.create({ metadata: { ['k'.repeat(64)]: 'v'.repeat(512) } });
      expect(edge.metadata).toEqual({ ['k'.repeat(64)]: 'v'.repeat(512) });
      const before = await count('sessions');

      const refusals: Array<[Json, RegExp, string | null]> = [
        [{ metadata: { ...sixteen, k16: 'one too many' } }, /at most 16 keys/, 'invalid_metadata'],
        [{ metadata: { ['k'.repeat(65)]: 'v' } }, /longer than 64/, 'invalid_metadata'],
        [{ metadata: { k: 'v'.repeat(513) } }, /longer than 512/, 'invalid_metadata'],
        [{ metadata: { '': 'v' } }, /must not be empty/, 'invalid_metadata'],
        [{ metadata: { k: 1 } }, /^metadata\.k:/, null],
        [{ title: 't'.repeat(513) }, /^title:/, null],
        [{ title: 5 }, /^title:/, null],
      ];
      for (const [body, pattern, code] of refusals) {
        const res = await f.call('POST', '/v1/sessions', {
          agent: f.agent.id,
          environment_id: f.environmentId,
          ...body,
        });
        const err = await expectError(res, 400, 'invalid_request_error');
        expect(err.error.message).toMatch(pattern);
        if (code) expect(err.error.details).toEqual({ error_code: code });
      }
      expect(await count('sessions')).toBe(before);
    });

    it('initial_events append the user messages in order and enqueue exactly one model_turn', async () => {
      const f = await fixture();
      const session = await f.create({
        metadata: { team: 'a' },
        initial_events: [message('first'), message('second')],
      });
      const log = await eventsOf(t.db, session.id);
      expect(log.map((e) => [e.seq, e.type, e.body])).toEqual([
        [1, 'user.message', { content: [{ type: 'text', text: 'first' }] }],
        [2, 'user.message', { content: [{ type: 'text', text: 'second' }] }],
      ]);
      expect(await workOf(t.db, session.id)).toEqual([
        {
          id: expect.any(String),
          kind: 'model_turn',
          state: 'queued',
          lane: 'claim',
          metadata: { team: 'a' },
        },
      ]);
      // The list of its events shows them with the wire's event shape.
      const events = await f.ok<{ data: Json[] }>('GET', `/v1/sessions/${session.id}/events`);
      expect(events.data).toEqual([
        {
          id: log[0]!.id,
          type: 'user.message',
          processed_at: expect.stringMatching(WIRE_STAMP),
          content: [{ type: 'text', text: 'first' }],
        },
        {
          id: log[1]!.id,
          type: 'user.message',
          processed_at: expect.stringMatching(WIRE_STAMP),
          content: [{ type: 'text', text: 'second' }],
        },
      ]);
      // Up to 50 initial events; 51 is refused whole.
      const fifty = await f.create({
        initial_events: Array.from({ length: 50 }, (_, i) => message(`m${i}`)),
      });
      expect((await eventsOf(t.db, fifty.id)).map((e) => e.seq)).toEqual(
        Array.from({ length: 50 }, (_, i) => i + 1),
      );
      const sessionsBefore = await count('sessions');
      const tooMany = await f.call('POST', '/v1/sessions', {
        agent: f.agent.id,
        environment_id: f.environmentId,
        initial_events: Array.from({ length: 51 }, (_, i) => message(`m${i}`)),
      });
      expect((await expectError(tooMany, 400, 'invalid_request_error')).error.message).toMatch(
        /^initial_events:/,
      );
      expect(await count('sessions')).toBe(sessionsBefore);
      // An empty initial_events list is no event at all.
      const quiet = await f.create({ initial_events: [] });
      expect(await owned(quiet.id)).toEqual({ events: 0, calls: 0, work: 0, sessions: 1 });
    });

    it('each field Leasehold cannot honour is refused with a 400 that names it, and nothing is written', async () => {
      const f = await fixture();
      const refused: Array<[string, Json]> = [
        ['resources', { resources: [{ type: 'github_repository', url: 'https://github.com/a/b' }] }],
        ['resources', { resources: [{ type: 'memory_store', memory_store_id: 'memstore_1' }] }],
        ['vault_ids', { vault_ids: ['vlt_1'] }],
        ['budget', { budget: { type: 'limit', max_list_cost: { amount: '1.00', currency: 'USD' } } }],
        [
          'initial_events.1',
          {
            initial_events: [
              message('hi'),
              {
                type: 'user.define_outcome',
                description: 'a poem',
                rubric: { type: 'text', content: 'good' },
              },
            ],
          },
        ],
        ['agent', { agent: { type: 'agent_with_overrides', id: f.agent.id, system: 'other' } }],
        ['unknown field "deployment_id"', { deployment_id: 'dep_1' }],
        ['initial_events.0', { initial_events: [{ type: 'user.interrupt' }] }],
      ];
      for (const [field, body] of refused) {
        const res = await f.call('POST', '/v1/sessions', {
          agent: f.agent.id,
          environment_id: f.environmentId,
          ...body,
        });
        const err = await expectError(res, 400, 'invalid_request_error');
        expect(err.error.message, JSON.stringify(body)).toContain(field);
      }
      // define_outcome is named as what it is, not as a shape problem.
      const outcome = await f.call('POST', '/v1/sessions', {
        agent: f.agent.id,
        environment_id: f.environmentId,
        initial_events: [
          { type: 'user.define_outcome', description: 'x', rubric: { type: 'text', content: 'y' } },
        ],
      });
      expect((await expectError(outcome, 400, 'invalid_request_error')).error.message).toMatch(
        /user\.define_outcome/,
      );
      expect({ sessions: await count('sessions'), work: await count('work_items') }).toEqual({
        sessions: 0,
        work: 0,
      });
      // Their empty values ask for nothing and are taken.
      const empty = await f.create({ resources: [], vault_ids: [], budget: null });
      expect(empty).toMatchObject({ resources: [], vault_ids: [], budget: null });
    });

    it('a cloud environment is refused with a 400 naming environment_id, and nothing is written', async () => {
      const f = await fixture();
      const cloud = await createEnvironment(t.db, 'cloud');
      const res = await f.call('POST', '/v1/sessions', {
        agent: f.agent.id,
        environment_id: cloud,
        initial_events: [message('hi')],
      });
      expect((await expectError(res, 400, 'invalid_request_error')).error.message).toMatch(
        /^environment_id:/,
      );
      expect({ sessions: await count('sessions'), work: await count('work_items') }).toEqual({
        sessions: 0,
        work: 0,
      });
    });

    it('an archived environment is refused with environment_archived', async () => {
      const f = await fixture();
      await f.ok('POST', `/v1/environments/${f.environmentId}/archive`);
      const res = await f.call('POST', '/v1/sessions', {
        agent: f.agent.id,
        environment_id: f.environmentId,
      });
      const err = await expectError(res, 400, 'invalid_request_error');
      expect(err.error.details).toEqual({ error_code: 'environment_archived' });
      expect(await count('sessions')).toBe(0);
    });

    it('a missing agent, agent version or environment is a 404 and writes nothing', async () => {
      const f = await fixture();
      const cases: Json[] = [
        { agent: UNKNOWN_AGENT, environment_id: f.environmentId },
        { agent: 'not-an-agent-id', environment_id: f.environmentId },
        { agent: { type: 'agent', id: f.agent.id, version: 2 }, environment_id: f.environmentId },
        { agent: { type: 'agent', id: f.agent.id, version: 2 ** 40 }, environment_id: f.environmentId },
        { agent: f.agent.id, environment_id: UNKNOWN_ENV },
        { agent: f.agent.id, environment_id: 'env-not-minted' },
      ];
      for (const body of cases) {
        await expectError(await f.call('POST', '/v1/sessions', body), 404, 'not_found_error');
      }
      // version 0 is not a version: a shape problem, not a missing one.
      await expectError(
        await f.call('POST', '/v1/sessions', {
          agent: { type: 'agent', id: f.agent.id, version: 0 },
          environment_id: f.environmentId,
        }),
        400,
        'invalid_request_error',
      );
      expect(await count('sessions')).toBe(0);
    });

    it('an archived agent is refused for new sessions, whichever version is named; its sessions stay readable', async () => {
      const f = await fixture();
      const before = await f.create();
      await f.ok('POST', `/v1/agents/${f.agent.id}/archive`);
      for (const agent of [f.agent.id, { type: 'agent', id: f.agent.id, version: 1 }]) {
        const res = await f.call('POST', '/v1/sessions', { agent, environment_id: f.environmentId });
        expect((await expectError(res, 400, 'invalid_request_error')).error.message).toContain(f.agent.id);
      }
      expect(await count('sessions')).toBe(1);
      expect((await f.ok<WireSession>('GET', `/v1/sessions/${before.id}`)).id).toBe(before.id);
    });

    it('an environment key may not create a session', async () => {
      const f = await fixture();
      const { key } = await issueEnvironmentKey(t.db, f.environmentId, 'worker', null);
      const res = await f.api.call('POST', '/v1/sessions', {
        key,
        body: { agent: f.agent.id, environment_id: f.environmentId },
      });
      await expectError(res, 401, 'authentication_error');
      expect(await count('sessions')).toBe(0);
    });
  });

  describe('GET /v1/sessions/{id}', () => {
    it("API keys and the session's own environment key read it; another environment's key gets exactly the missing session's 404", async () => {
      const f = await fixture();
      const session = await f.create({ title: 'mine' });
      const own = await issueEnvironmentKey(t.db, f.environmentId, 'own', null);
      const otherEnv = await createEnvironment(t.db, 'self_hosted');
      const foreign = await issueEnvironmentKey(t.db, otherEnv, 'foreign', null);
      const platform = await apiKey(t.db, 'platform');

      for (const key of [own.key, platform]) {
        const res = await f.api.call('GET', `/v1/sessions/${session.id}`, { key });
        expect(res.status).toBe(200);
        expect(((await res.json()) as WireSession).title).toBe('mine');
      }
      const foreignAnswer = await f.api.call('GET', `/v1/sessions/${session.id}`, { key: foreign.key });
      await expectError(foreignAnswer.clone(), 404, 'not_found_error');
      const missing = await f.api.call('GET', `/v1/sessions/${UNKNOWN_SESSION}`, { key: foreign.key });
      expect(await answer(foreignAnswer)).toEqual(await answer(missing));
      const missingAsAdmin = await f.call('GET', `/v1/sessions/${UNKNOWN_SESSION}`);
      expect(await answer(missingAsAdmin)).toEqual({
        status: 404,
        type: 'not_found_error',
        message: 'session not found',
      });
    });

    it('a session the platform lane opened is a 404 to every credential, like a missing one', async () => {
      const f = await fixture();
      const laneSession = await platformSession(t.db, f.environmentId);
      const own = await issueEnvironmentKey(t.db, f.environmentId, 'own', null);
      for (const key of [f.admin, own.key]) {
        const res = await f.api.call('GET', `/v1/sessions/${laneSession}`, { key });
        expect(await answer(res)).toEqual({
          status: 404,
          type: 'not_found_error',
          message: 'session not found',
        });
      }
    });

    it('an id no session could have is a 404, never a 500', async () => {
      const f = await fixture();
      for (const id of ['a'.repeat(129), 'sess_%27%3B--', 'sess_%00', '%E2%98%83']) {
        await expectError(await f.call('GET', `/v1/sessions/${id}`), 404, 'not_found_error');
      }
    });

    it('without a credential it is a 401', async () => {
      const f = await fixture();
      const session = await f.create();
      await expectError(
        await f.api.call('GET', `/v1/sessions/${session.id}`, { key: null }),
        401,
        'authentication_error',
      );
    });
  });

  describe('GET /v1/sessions', () => {
    /** Every page of `query` (a query string without `page`), and how many requests it took. */
    async function allPages(f: Fixture, query: string) {
      const seen: WireSession[] = [];
      const pages: number[] = [];
      let page: string | null = null;
      do {
        const q = page ? `${query}&page=${encodeURIComponent(page)}` : query;
        const body: Page = await f.ok<Page>('GET', `/v1/sessions?${q}`);
        expect(body.prev_page).toBeNull();
        seen.push(...body.data);
        pages.push(body.data.length);
        page = body.next_page;
        expect(pages.length).toBeLessThan(100);
      } while (page);
      return { seen, pages };
    }

    it('pages of `limit` visit every session exactly once, newest first by default and oldest first with order=asc, ties broken by id', async () => {
      const f = await fixture();
      const ids: string[] = [];
      for (let i = 0; i < 13; i++) ids.push((await f.create({ title: `s${i}` })).id);
      // Five share one created_at: the keyset must still step through them one by one.
      await t.db.execute(
        sql`UPDATE sessions SET created_at = (SELECT created_at FROM sessions WHERE id = ${ids[4]!})
             WHERE id IN (${sql.join(
               ids.slice(4, 9).map((id) => sql`${id}`),
               sql`, `,
             )})`,
      );
      const whole = (await f.ok<Page>('GET', '/v1/sessions?limit=100')).data;
      expect(new Set(whole.map((s) => s.id))).toEqual(new Set(ids));
      for (let i = 1; i < whole.length; i++) {
        const [a, b] = [whole[i - 1]!, whole[i]!];
        const ca = micros(a.created_at);
        const cb = micros(b.created_at);
        expect(ca > cb || (ca === cb && a.id > b.id), `${a.id} before ${b.id}`).toBe(true);
      }

      for (const limit of [1, 2, 3, 5, 12, 13]) {
        const desc = await allPages(f, `limit=${limit}`);
        expect(desc.seen.map((s) => s.id)).toEqual(whole.map((s) => s.id));
        expect(desc.pages).toEqual(
          Array.from({ length: Math.ceil(13 / limit) }, (_, i) => Math.min(limit, 13 - i * limit)),
        );
        const asc = await allPages(f, `limit=${limit}&order=asc`);
        expect(asc.seen.map((s) => s.id)).toEqual(whole.map((s) => s.id).reverse());
      }
    });

    it('the default page is 20 and the last page says next_page null', async () => {
      const f = await fixture();
      for (let i = 0; i < 21; i++) await f.create();
      const first = await f.ok<Page>('GET', '/v1/sessions');
      expect(first.data).toHaveLength(20);
      expect(first.next_page).toEqual(expect.any(String));
      const second = await f.ok<Page>('GET', `/v1/sessions?page=${first.next_page}`);
      expect(second).toEqual({ data: [expect.any(Object)], next_page: null, prev_page: null });
      const exactly = await f.ok<Page>('GET', '/v1/sessions?limit=21');
      expect(exactly.next_page).toBeNull();
    });

    it('filters by agent_id, agent_version (only with agent_id), statuses[] and include_archived', async () => {
      const f = await fixture();
      const other = await f.ok<{ id: string }>('POST', '/v1/agents', {
        name: 'other',
        model: 'claude-opus-4-8',
      });
      const a1 = await f.create();
      await f.ok('POST', `/v1/agents/${f.agent.id}`, { version: 1, system: 'v2' });
      const a2 = await f.create();
      const b1 = await f.create({ agent: other.id });
      const archived = await f.create();
      await f.ok('POST', `/v1/sessions/${archived.id}/archive`);
      await t.db.execute(sql`UPDATE sessions SET status = 'running' WHERE id = ${a2.id}`);
      await t.db.execute(sql`UPDATE sessions SET status = 'terminated' WHERE id = ${b1.id}`);
      const ids = async (query: string) =>
        (await allPages(f, `limit=2&${query}`)).seen.map((s) => s.id).sort();
      const sorted = (...s: WireSession[]) => s.map((x) => x.id).sort();

      expect(await ids('')).toEqual(sorted(a1, a2, b1));
      expect(await ids('include_archived=true')).toEqual(sorted(a1, a2, b1, archived));
      expect(await ids('include_archived=false')).toEqual(sorted(a1, a2, b1));
      expect(await ids(`agent_id=${f.agent.id}`)).toEqual(sorted(a1, a2));
      expect(await ids(`agent_id=${f.agent.id}&include_archived=true`)).toEqual(sorted(a1, a2, archived));
      expect(await ids(`agent_id=${f.agent.id}&agent_version=1`)).toEqual(sorted(a1));
      expect(await ids(`agent_id=${f.agent.id}&agent_version=2&include_archived=true`)).toEqual(
        sorted(a2, archived),
      );
      expect(await ids(`agent_id=${other.id}&agent_version=2`)).toEqual([]);
      // The SDK documents agent_version as applying only with agent_id.
      expect(await ids('agent_version=1')).toEqual(sorted(a1, a2, b1));
      expect(await ids(`agent_id=${UNKNOWN_AGENT}`)).toEqual([]);
      // No session here has a memory store or came from a deployment.
      expect(await ids('memory_store_id=memstore_1')).toEqual([]);
      expect(await ids('deployment_id=dep_1')).toEqual([]);
      // Not an agent id at all (a NUL in it included): a 400 that never reaches SQL.
      for (const bad of ['nope', 'agent_a%00b']) {
        const res = await f.call('GET', `/v1/sessions?agent_id=${bad}`);
        expect(res.status, bad).toBe(400);
      }
      expect(await ids('statuses[]=idle')).toEqual(sorted(a1));
      expect(await ids('statuses[]=running&statuses[]=terminated')).toEqual(sorted(a2, b1));
      expect(await ids('statuses=running')).toEqual(sorted(a2));
      expect(await ids('statuses[]=rescheduling')).toEqual([]);
      expect(await ids(`statuses[]=idle&agent_id=${other.id}`)).toEqual([]);
    });

    it('created_at[gt|gte|lt|lte] bound the list by instant, inclusive or not as named, in either order', async () => {
      const f = await fixture();
      const s = [await f.create(), await f.create(), await f.create(), await f.create()];
      const at = [
        '2031-01-01T00:00:00Z',
        '2031-01-01T00:00:00.000001Z',
        '2031-01-01T00:00:01Z',
        '2031-01-02T00:00:00Z',
      ];
      for (let i = 0; i < 4; i++)
        await t.db.execute(
          sql`UPDATE sessions SET created_at = ${at[i]}::timestamptz WHERE id = ${s[i]!.id}`,
        );
      const ids = async (query: string, order: 'asc' | 'desc') =>
        (await allPages(f, `limit=1&order=${order}&${query}`)).seen.map((x) => x.id);
      const pick = (...i: number[]) => i.map((n) => s[n]!.id);
      const cases: Array<[string, number[]]> = [
        ['created_at[gt]=2031-01-01T00:00:00Z', [1, 2, 3]],
        ['created_at[gte]=2031-01-01T00:00:00Z', [0, 1, 2, 3]],
        ['created_at[gte]=2031-01-01T00:00:00.000001Z', [1, 2, 3]],
        ['created_at[lt]=2031-01-01T00:00:01Z', [0, 1]],
        ['created_at[lte]=2031-01-01T00:00:01Z', [0, 1, 2]],
        // The same instant in another offset.
        ['created_at[lte]=2031-01-01T01:00:01%2B01:00', [0, 1, 2]],
        ['created_at[gt]=2031-01-01T00:00:00Z&created_at[lt]=2031-01-02T00:00:00Z', [1, 2]],
        ['created_at[gt]=2031-01-02T00:00:00Z', []],
      ];
      for (const [query, expected] of cases) {
        expect(await ids(query, 'asc'), query).toEqual(pick(...expected));
        expect(await ids(query, 'desc'), query).toEqual(pick(...expected).reverse());
      }
    });

    it('sessions the platform lane opened are never listed', async () => {
      const f = await fixture();
      await platformSession(t.db, f.environmentId);
      const mine = await f.create();
      expect((await f.ok<Page>('GET', '/v1/sessions?include_archived=true')).data.map((s) => s.id)).toEqual([
        mine.id,
      ]);
    });

    it('a bad cursor, limit, order, status, bound or flag is a 400 naming it', async () => {
      const f = await fixture();
      await f.create();
      await f.create();
      const good = (await f.ok<Page>('GET', '/v1/sessions?limit=1')).next_page!;
      const eventCursor = Buffer.from('events-v1|5').toString('base64url');
      const bad: Array<[string, RegExp]> = [
        ['page=garbage', /page cursor/],
        [`page=${good}x`, /page cursor/],
        [`page=${eventCursor}`, /page cursor/],
        [`page=${good.slice(0, -2)}`, /page cursor/],
        ['limit=0', /limit/],
        ['limit=101', /limit/],
        ['limit=-1', /limit/],
        ['limit=1.5', /limit/],
        ['limit=abc', /limit/],
        ['limit=1e2', /limit/],
        ['order=newest', /order/],
        ['statuses[]=sleeping', /statuses/],
        ['created_at[gte]=yesterday', /created_at\[gte\]/],
        ['created_at[lt]=2031-13-01T00:00:00Z', /created_at\[lt\]/],
        ['include_archived=yes', /include_archived/],
        ['agent_version=0', /agent_version/],
        ['agent_version=abc', /agent_version/],
      ];
      for (const [query, pattern] of bad) {
        const res = await f.call('GET', `/v1/sessions?${query}`);
        expect(res.status, query).toBe(400);
        const err = await expectError(res, 400, 'invalid_request_error');
        expect(err.error.message, query).toMatch(pattern);
      }
      expect((await f.ok<Page>('GET', `/v1/sessions?limit=1&page=${good}`)).data).toHaveLength(1);
      // An empty value is no value (the convention of every list here): the first page.
      expect((await f.ok<Page>('GET', '/v1/sessions?page=&limit=')).data).toHaveLength(2);
    });

    it('an environment key may not list sessions', async () => {
      const f = await fixture();
      const { key } = await issueEnvironmentKey(t.db, f.environmentId, 'worker', null);
      await expectError(await f.api.call('GET', '/v1/sessions', { key }), 401, 'authentication_error');
    });
  });

  describe('POST /v1/sessions/{id}', () => {
    it('sets the title, keeps it when absent and clears it with null; created_at never moves', async () => {
      const f = await fixture();
      const session = await f.create({ title: 'first' });
      const renamed = await f.ok<WireSession>('POST', `/v1/sessions/${session.id}`, { title: 'second' });
      expect(renamed).toMatchObject({ id: session.id, title: 'second', created_at: session.created_at });
      expect(micros(renamed.updated_at) > micros(session.updated_at)).toBe(true);
      expect((await f.ok<WireSession>('POST', `/v1/sessions/${session.id}`, {})).title).toBe('second');
      expect(
        (await f.ok<WireSession>('POST', `/v1/sessions/${session.id}`, { metadata: { a: '1' } })).title,
      ).toBe('second');
      const cleared = await f.ok<WireSession>('POST', `/v1/sessions/${session.id}`, { title: null });
      expect(cleared.title).toBeNull();
      expect((await f.ok<WireSession>('GET', `/v1/sessions/${session.id}`)).title).toBeNull();
    });

    it('patches metadata key by key: a string sets, null or "" deletes, the rest stays', async () => {
      const f = await fixture();
      const session = await f.create({ metadata: { keep: '1', drop: '2', empty: '3', change: '4' } });
      const patched = await f.ok<WireSession>('POST', `/v1/sessions/${session.id}`, {
        metadata: { drop: null, empty: '', change: 'changed', add: 'new' },
      });
      expect(patched.metadata).toEqual({ keep: '1', change: 'changed', add: 'new' });
      expect(
        (await f.ok<WireSession>('POST', `/v1/sessions/${session.id}`, { metadata: null })).metadata,
      ).toEqual(patched.metadata);
      expect((await f.ok<WireSession>('GET', `/v1/sessions/${session.id}`)).metadata).toEqual(
        patched.metadata,
      );
    });

    it('a patch that would leave more than 16 keys is refused with invalid_metadata and changes nothing', async () => {
      const f = await fixture();
      const ten = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`a${i}`, 'x']));
      const session = await f.create({ metadata: ten });
      const seven = Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`b${i}`, 'y']));
      const res = await f.call('POST', `/v1/sessions/${session.id}`, {
        metadata: seven,
        title: 'not applied',
      });
      expect((await expectError(res, 400, 'invalid_request_error')).error.details).toEqual({
        error_code: 'invalid_metadata',
      });
      expect(await f.ok<WireSession>('GET', `/v1/sessions/${session.id}`)).toMatchObject({
        metadata: ten,
        title: null,
        updated_at: session.updated_at,
      });
      // Deleting as many as it adds fits.
      const swapped = await f.ok<WireSession>('POST', `/v1/sessions/${session.id}`, {
        metadata: { ...seven, a0: null, a1: null, a2: null, a3: null, a4: null, a5: null, a6: null },
      });
      expect(Object.keys(swapped.metadata)).toHaveLength(10);
    });

    it('work enqueued after an update carries the new metadata', async () => {
      const f = await fixture();
      const session = await f.create({ metadata: { team: 'old' } });
      await f.ok('POST', `/v1/sessions/${session.id}`, { metadata: { team: 'new' } });
      await f.ok('POST', `/v1/sessions/${session.id}/events`, { events: [message('go')] });
      expect((await workOf(t.db, session.id)).map((w) => w.metadata)).toEqual([{ team: 'new' }]);
    });

    it('agent, budget and vault_ids are refused by name, unknown fields too, and nothing changes', async () => {
      const f = await fixture();
      const session = await f.create({ title: 'same' });
      const refused: Array<[string, Json]> = [
        ['agent', { agent: { tools: [] } }],
        ['agent', { agent: {} }],
        ['budget', { budget: { type: 'limit', max_list_cost: { amount: '1', currency: 'USD' } } }],
        ['vault_ids', { vault_ids: ['vlt_1'] }],
        ['unknown field "status"', { status: 'terminated' }],
        ['unknown field "environment_id"', { environment_id: f.environmentId }],
      ];
      for (const [field, body] of refused) {
        const res = await f.call('POST', `/v1/sessions/${session.id}`, { ...body, title: 'changed' });
        expect((await expectError(res, 400, 'invalid_request_error')).error.message).toContain(field);
      }
      expect(await f.ok('GET', `/v1/sessions/${session.id}`)).toEqual({
        ...session,
        stats: expect.any(Object),
      });
      // Asking for no budget and no vaults asks for nothing.
      const ok = await f.ok<WireSession>('POST', `/v1/sessions/${session.id}`, {
        budget: null,
        vault_ids: [],
        agent: null,
      });
      expect(ok).toMatchObject({ budget: null, vault_ids: [], title: 'same' });
    });

    it('a missing or platform-lane session is a 404; an environment key is refused', async () => {
      const f = await fixture();
      const laneSession = await platformSession(t.db, f.environmentId);
      for (const id of [UNKNOWN_SESSION, laneSession]) {
        await expectError(await f.call('POST', `/v1/sessions/${id}`, { title: 'x' }), 404, 'not_found_error');
      }
      const session = await f.create();
      const { key } = await issueEnvironmentKey(t.db, f.environmentId, 'worker', null);
      const res = await f.api.call('POST', `/v1/sessions/${session.id}`, { key, body: { title: 'x' } });
      await expectError(res, 401, 'authentication_error');
      expect((await f.ok<WireSession>('GET', `/v1/sessions/${session.id}`)).title).toBeNull();
    });
  });

  describe('POST /v1/sessions/{id}/archive', () => {
    it('is idempotent, hides the session from the list unless include_archived, and leaves it readable', async () => {
      const f = await fixture();
      const session = await f.create({ initial_events: [message('hi')] });
      const kept = await f.create();
      const first = await f.ok<WireSession>('POST', `/v1/sessions/${session.id}/archive`);
      expect(first.archived_at).toMatch(WIRE_STAMP);
      const again = await f.ok<WireSession>('POST', `/v1/sessions/${session.id}/archive`);
      expect(again.archived_at).toBe(first.archived_at);
      expect((await f.ok<WireSession>('GET', `/v1/sessions/${session.id}`)).archived_at).toBe(
        first.archived_at,
      );
      expect((await f.ok<Page>('GET', '/v1/sessions')).data.map((s) => s.id)).toEqual([kept.id]);
      expect((await f.ok<Page>('GET', '/v1/sessions?include_archived=true')).data.map((s) => s.id)).toEqual([
        kept.id,
        session.id,
      ]);
      expect((await f.ok<{ data: unknown[] }>('GET', `/v1/sessions/${session.id}/events`)).data).toHaveLength(
        1,
      );
      // Its work is left as it was.
      expect((await workOf(t.db, session.id)).map((w) => w.state)).toEqual(['queued']);
    });

    it('a missing or platform-lane session is a 404 and the latter stays unarchived', async () => {
      const f = await fixture();
      const laneSession = await platformSession(t.db, f.environmentId);
      for (const id of [UNKNOWN_SESSION, laneSession])
        await expectError(await f.call('POST', `/v1/sessions/${id}/archive`), 404, 'not_found_error');
      const [row] = await rows<{ archived: boolean }>(
        t.db,
        sql`SELECT archived_at IS NOT NULL AS archived FROM sessions WHERE id = ${laneSession}`,
      );
      expect(row!.archived).toBe(false);
    });
  });

  describe('DELETE /v1/sessions/{id}', () => {
    it('removes the session with its log, tool calls and work items, and only those; then every route is a 404', async () => {
      const f = await fixture();
      const session = await f.create({ initial_events: [message('run ls')] });
      await runTurn(t.db, session.id, [toolUse('toolu_1', 'bash', { command: 'ls' })]);
      const bystander = await f.create({ initial_events: [message('hello')] });
      expect(await owned(session.id)).toMatchObject({ events: 4, calls: 1, work: 2, sessions: 1 });
      const bystanderBefore = await owned(bystander.id);

      expect(await f.ok('DELETE', `/v1/sessions/${session.id}`)).toEqual({
        id: session.id,
        type: 'session_deleted',
      });
      expect(await owned(session.id)).toEqual({ events: 0, calls: 0, work: 0, sessions: 0 });
      expect(await owned(bystander.id)).toEqual(bystanderBefore);

      const routes: Array<[string, string, unknown?]> = [
        ['GET', `/v1/sessions/${session.id}`],
        ['GET', `/v1/sessions/${session.id}/events`],
        ['GET', `/v1/sessions/${session.id}/events/stream`],
        ['POST', `/v1/sessions/${session.id}/events`, { events: [message('anyone there?')] }],
        ['POST', `/v1/sessions/${session.id}`, { title: 'x' }],
        ['POST', `/v1/sessions/${session.id}/archive`],
        ['DELETE', `/v1/sessions/${session.id}`],
      ];
      for (const [method, path, body] of routes)
        await expectError(await f.call(method, path, body), 404, 'not_found_error');
      expect(await owned(session.id)).toEqual({ events: 0, calls: 0, work: 0, sessions: 0 });
    });

    it('a worker holding one of its items is refused from its next call once the session is deleted', async () => {
      const f = await fixture();
      const session = await f.create({ initial_events: [message('run ls')] });
      await runTurn(t.db, session.id, [toolUse('toolu_1', 'bash', { command: 'ls' })]);
      const { key } = await issueEnvironmentKey(t.db, f.environmentId, 'worker', null);
      const work = `/v1/environments/${f.environmentId}/work`;
      const polled = await f.api.call('GET', `${work}/poll`, { key });
      expect(polled.status).toBe(200);
      const item = (await polled.json()) as { id: string; data: { id: string } };
      expect(item.data.id).toBe(session.id);
      expect((await f.api.call('POST', `${work}/${item.id}/ack`, { key })).status).toBe(200);
      const beat = await f.api.call(
        'POST',
        `${work}/${item.id}/heartbeat?expected_last_heartbeat=NO_HEARTBEAT`,
        {
          key,
        },
      );
      expect(beat.status).toBe(200);
      const { last_heartbeat } = (await beat.json()) as { last_heartbeat: string };
      await f.ok('DELETE', `/v1/sessions/${session.id}`);
      const next = `${work}/${item.id}/heartbeat?expected_last_heartbeat=${encodeURIComponent(last_heartbeat)}`;
      await expectError(await f.api.call('POST', next, { key }), 404, 'not_found_error');
      await expectError(
        await f.api.call('GET', `/v1/sessions/${session.id}`, { key }),
        404,
        'not_found_error',
      );
    });

    it('a platform-lane session is a 404 and keeps its rows', async () => {
      const f = await fixture();
      const laneSession = await platformSession(t.db, f.environmentId);
      await f.ok(
        'POST',
        '/v1/platform/work',
        {
          environment_id: f.environmentId,
          session_id: laneSession,
          kind: 'model_turn',
        },
        201,
      );
      await expectError(await f.call('DELETE', `/v1/sessions/${laneSession}`), 404, 'not_found_error');
      expect(await owned(laneSession)).toEqual({ events: 0, calls: 0, work: 1, sessions: 1 });
    });

    it('an environment key may not delete', async () => {
      const f = await fixture();
      const session = await f.create();
      const { key } = await issueEnvironmentKey(t.db, f.environmentId, 'worker', null);
      await expectError(
        await f.api.call('DELETE', `/v1/sessions/${session.id}`, { key }),
        401,
        'authentication_error',
      );
      expect((await owned(session.id)).sessions).toBe(1);
    });
  });
});
