/**
 * A session's events over HTTP, in process: the list (`GET /v1/sessions/{id}/events`), sending
 * (`POST …/events`) and the stream (`GET …/events/stream`, here on its polling path: the app
 * has no wake-up feed, as on Workers). Logs are seeded with the library's `appendEvents`;
 * tool calls come from a turn run through the loop; every post that must write nothing is
 * checked against the session's whole state (row, log, calls, work) before and after.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES } from '../../src/api/body.js';
import { issueEnvironmentKey } from '../../src/auth/credentials.js';
import { appendEvents, type NewEvent, toWireEvent } from '../../src/sessions/index.js';
import { useTestDb } from '../helpers/db.js';
import { createEnvironment, createSession as platformSession } from '../helpers/factories.js';
import { asAdmin, expectError, micros, WIRE_STAMP } from '../helpers/management.js';
import { apiSession, eventsOf, runTurn, sessionState, toolUse, workOf } from '../helpers/sessions.js';

type Json = Record<string, unknown>;
type WireEvent = Json & { id: string; type: string; processed_at: string };
interface EventPage {
  data: WireEvent[];
  next_page: string | null;
}

const UNKNOWN_SESSION = 'sess_0000000000000000000000zz';
const message = (text: string) => ({ type: 'user.message', content: [{ type: 'text', text }] });
const TYPES = [
  'user.message',
  'agent.message',
  'agent.thinking',
  'session.status_running',
  'session.status_idle',
];

/** Status, error type and message of an answer (its request id differs per request). */
async function answer(res: Response) {
  const text = await res.text();
  let body: { error?: { type: string; message: string } } | null = null;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: res.status, type: body?.error?.type, message: body?.error?.message };
}

describe('session events', () => {
  const t = useTestDb('pg');

  async function fixture() {
    const admin = await asAdmin(t.db);
    const { environmentId, sessionId } = await apiSession(t.db, { metadata: { team: 'a' } });
    const own = await issueEnvironmentKey(t.db, environmentId, 'own worker', null);
    const foreignEnv = await createEnvironment(t.db, 'self_hosted');
    const foreign = await issueEnvironmentKey(t.db, foreignEnv, 'foreign worker', null);
    const as = (key: string) => (method: string, path: string, body?: unknown) =>
      admin.api.call(method, path, { key, body });
    return {
      ...admin,
      environmentId,
      sessionId,
      events: `/v1/sessions/${sessionId}/events`,
      ownKey: own.key,
      foreignKey: foreign.key,
      asOwn: as(own.key),
      asForeign: as(foreign.key),
    };
  }

  /** 2,500 events in five appends of 500: each append shares one processed_at. */
  async function seed(sessionId: string, n = 2_500, batch = 500) {
    for (let start = 0; start < n; start += batch) {
      const events: NewEvent[] = Array.from({ length: Math.min(batch, n - start) }, (_, i) => ({
        type: TYPES[(start + i) % TYPES.length]!,
        body: { n: start + i + 1 },
      }));
      await appendEvents(t.db, sessionId, events);
    }
    return (await eventsOf(t.db, sessionId)).map((e) => toWireEvent(e) as WireEvent);
  }

  /** Runs a turn that calls bash and the custom `lookup`; returns the two call events. */
  async function twoCalls(
    sessionId: string,
    admin: { ok: (m: string, p: string, b?: unknown) => Promise<unknown> },
  ) {
    await admin.ok('POST', `/v1/sessions/${sessionId}/events`, { events: [message('go')] });
    await runTurn(t.db, sessionId, [
      toolUse('toolu_1', 'bash', { command: 'ls' }),
      toolUse('toolu_2', 'lookup'),
    ]);
    const log = await eventsOf(t.db, sessionId);
    return {
      bash: log.find((e) => e.type === 'agent.tool_use')!,
      lookup: log.find((e) => e.type === 'agent.custom_tool_use')!,
    };
  }

  describe('GET /v1/sessions/{id}/events', () => {
    async function walk(f: Awaited<ReturnType<typeof fixture>>, query: string) {
      const seen: WireEvent[] = [];
      const sizes: number[] = [];
      let page: string | null = null;
      do {
        const res = await f.call('GET', `${f.events}?${query}${page ? `&page=${page}` : ''}`);
        expect(res.status, query).toBe(200);
        const body = (await res.json()) as EventPage;
        seen.push(...body.data);
        sizes.push(body.data.length);
        page = body.next_page;
        expect(sizes.length).toBeLessThan(50);
      } while (page);
      return { seen, sizes };
    }

    it('cursor pages of 1000 walk 2,500 events exactly once, in sequence order ascending and descending', async () => {
      const f = await fixture();
      const all = await seed(f.sessionId);
      expect(all.map((e) => e.n)).toEqual(Array.from({ length: 2_500 }, (_, i) => i + 1));
      const asc = await walk(f, 'limit=1000');
      expect(asc.sizes).toEqual([1000, 1000, 500]);
      expect(asc.seen).toEqual(all);
      const desc = await walk(f, 'limit=1000&order=desc');
      expect(desc.sizes).toEqual([1000, 1000, 500]);
      expect(desc.seen).toEqual([...all].reverse());
      // A limit that divides the log evenly ends without an empty page.
      expect((await walk(f, 'limit=500')).sizes).toEqual([500, 500, 500, 500, 500]);
      // The default: 100 a page, ascending.
      const first = await f.ok<EventPage>('GET', f.events);
      expect(first.data).toEqual(all.slice(0, 100));
      expect(first.next_page).toEqual(expect.any(String));
    });

    it('types[] keeps only the types named, across pages, in order', async () => {
      const f = await fixture();
      const all = await seed(f.sessionId, 1_000, 1_000);
      const want = ['agent.message', 'session.status_idle'];
      const filtered = await walk(f, `limit=150&${want.map((w) => `types[]=${w}`).join('&')}`);
      expect(filtered.seen).toEqual(all.filter((e) => want.includes(e.type)));
      const desc = await walk(f, 'limit=150&order=desc&types[]=agent.thinking');
      expect(desc.seen).toEqual(all.filter((e) => e.type === 'agent.thinking').reverse());
      expect((await walk(f, 'types=user.message')).seen).toEqual(
        all.filter((e) => e.type === 'user.message'),
      );
      expect((await walk(f, 'types[]=user.tool_result')).seen).toEqual([]);
    });

    it('created_at bounds (on processed_at) agree with the order: processed_at never decreases along the log', async () => {
      const f = await fixture();
      const all = await seed(f.sessionId, 1_000, 200);
      const stamps = all.map((e) => micros(e.processed_at));
      for (let i = 1; i < stamps.length; i++) expect(stamps[i]! >= stamps[i - 1]!).toBe(true);
      // Five appends, five distinct instants, each shared by its 200 events.
      const instants = [...new Set(all.map((e) => e.processed_at))];
      expect(instants).toHaveLength(5);
      const cmp = {
        gt: (a: bigint, b: bigint) => a > b,
        gte: (a: bigint, b: bigint) => a >= b,
        lt: (a: bigint, b: bigint) => a < b,
        lte: (a: bigint, b: bigint) => a <= b,
      };
      for (const bound of [instants[0]!, instants[2]!, instants[4]!]) {
        for (const op of ['gt', 'gte', 'lt', 'lte'] as const) {
          const expected = all.filter((e) => cmp[op](micros(e.processed_at), micros(bound)));
          const query = `limit=333&created_at[${op}]=${bound}`;
          expect((await walk(f, query)).seen, query).toEqual(expected);
          expect((await walk(f, `${query}&order=desc`)).seen, query).toEqual([...expected].reverse());
        }
      }
      // Two bounds together: exactly the middle append.
      const middle = await walk(f, `limit=1000&created_at[gt]=${instants[1]}&created_at[lt]=${instants[3]}`);
      expect(middle.seen).toEqual(all.slice(400, 600));
    });

    it('limits 1 and 1000 are taken; 0, 1001 and non-integers are a 400, as are bad cursors, orders, bounds and types', async () => {
      const f = await fixture();
      await seed(f.sessionId, 3, 3);
      expect((await f.ok<EventPage>('GET', `${f.events}?limit=1`)).data).toHaveLength(1);
      expect((await f.ok<EventPage>('GET', `${f.events}?limit=1000`)).data).toHaveLength(3);
      const sessionsCursor = Buffer.from(`sessions-v1|2030-01-01T00:00:00Z|${f.sessionId}`).toString(
        'base64url',
      );
      const bad: Array<[string, RegExp]> = [
        ['limit=0', /limit/],
        ['limit=1001', /limit/],
        ['limit=10.5', /limit/],
        ['limit=ten', /limit/],
        ['page=%%%', /page cursor/],
        ['page=bm90IGEgY3Vyc29y', /page cursor/],
        [`page=${sessionsCursor}`, /page cursor/],
        [`page=${Buffer.from('events-v1|-1').toString('base64url')}`, /page cursor/],
        [`page=${Buffer.from('events-v1|99999999999').toString('base64url')}`, /page cursor/],
        ['order=up', /order/],
        ['created_at[gt]=now', /created_at\[gt\]/],
        ['created_at[lte]=2030-02-30T00:00:00Z', /created_at\[lte\]/],
        [Array.from({ length: 65 }, (_, i) => `types[]=t${i}`).join('&'), /types/],
        [`types[]=${'t'.repeat(65)}`, /types/],
        // Never reaches SQL, whose text type refuses a NUL (a 500 before).
        ['types[]=user.a%00b', /types/],
        ['types[]=user.message&types[]=Agent.Message', /types/],
      ];
      for (const [query, pattern] of bad) {
        const res = await f.call('GET', `${f.events}?${query}`);
        expect(res.status, query).toBe(400);
        expect((await expectError(res, 400, 'invalid_request_error')).error.message, query).toMatch(pattern);
      }
    });

    it("the session's own environment key lists its log; another environment's key gets the missing session's 404", async () => {
      const f = await fixture();
      const all = await seed(f.sessionId, 10, 10);
      const own = await f.asOwn('GET', f.events);
      expect(own.status).toBe(200);
      expect(((await own.json()) as EventPage).data).toEqual(all);
      const foreign = await answer(await f.asForeign('GET', f.events));
      expect(foreign).toEqual({ status: 404, type: 'not_found_error', message: 'session not found' });
      expect(await answer(await f.asForeign('GET', `/v1/sessions/${UNKNOWN_SESSION}/events`))).toEqual(
        foreign,
      );
    });
  });

  describe('POST /v1/sessions/{id}/events', () => {
    it('a user.message is stored with a sevt_ id and processed_at and enqueues one model_turn; a second reuses the live slot', async () => {
      const f = await fixture();
      const sent = await f.ok<{ data: WireEvent[] }>('POST', f.events, {
        events: [message('one'), message('two')],
      });
      expect(sent.data).toEqual([
        {
          id: expect.stringMatching(/^sevt_[0-9a-z]{24}$/),
          type: 'user.message',
          processed_at: expect.stringMatching(WIRE_STAMP),
          content: [{ type: 'text', text: 'one' }],
        },
        {
          id: expect.stringMatching(/^sevt_[0-9a-z]{24}$/),
          type: 'user.message',
          processed_at: expect.stringMatching(WIRE_STAMP),
          content: [{ type: 'text', text: 'two' }],
        },
      ]);
      await f.ok('POST', f.events, { events: [message('three')] });
      expect((await f.ok<EventPage>('GET', f.events)).data.slice(0, 2)).toEqual(sent.data);
      expect(await workOf(t.db, f.sessionId)).toEqual([
        {
          id: expect.any(String),
          kind: 'model_turn',
          state: 'queued',
          lane: 'claim',
          metadata: { team: 'a' },
        },
      ]);
    });

    it('the worker’s key answers calls: an earlier answer re-announces requires_action, the last enqueues the next turn', async () => {
      const f = await fixture();
      const { bash, lookup } = await twoCalls(f.sessionId, f);
      const first = await f.asOwn('POST', f.events, {
        events: [
          { type: 'user.tool_result', tool_use_id: bash.id, content: [{ type: 'text', text: 'a b' }] },
        ],
      });
      expect(first.status).toBe(200);
      expect(((await first.json()) as { data: WireEvent[] }).data).toEqual([
        {
          id: expect.stringMatching(/^sevt_/),
          type: 'user.tool_result',
          processed_at: expect.stringMatching(WIRE_STAMP),
          tool_use_id: bash.id,
          content: [{ type: 'text', text: 'a b' }],
          is_error: false,
        },
      ]);
      let log = await eventsOf(t.db, f.sessionId);
      expect(log.at(-1)).toMatchObject({
        type: 'session.status_idle',
        body: { stop_reason: { type: 'requires_action', event_ids: [lookup.id] } },
      });
      expect(
        (await workOf(t.db, f.sessionId)).filter((w) => w.state === 'queued').map((w) => w.kind),
      ).toEqual(['tool_exec']);
      const last = await f.asOwn('POST', f.events, {
        events: [{ type: 'user.custom_tool_result', custom_tool_use_id: lookup.id, is_error: true }],
      });
      expect(last.status).toBe(200);
      log = await eventsOf(t.db, f.sessionId);
      expect(log.at(-1)).toMatchObject({
        type: 'user.custom_tool_result',
        body: { custom_tool_use_id: lookup.id, content: [], is_error: true },
      });
      expect(
        (await workOf(t.db, f.sessionId))
          .filter((w) => w.state === 'queued')
          .map((w) => w.kind)
          .sort(),
      ).toEqual(['model_turn', 'tool_exec']);
    });

    it('user.tool_confirmation: allow is recorded and answers nothing; deny answers the call with an error saying why', async () => {
      const f = await fixture();
      await f.ok('POST', f.events, { events: [message('write two files')] });
      await runTurn(t.db, f.sessionId, [toolUse('toolu_1', 'write'), toolUse('toolu_2', 'write')]);
      const [a, b] = (await eventsOf(t.db, f.sessionId)).filter((e) => e.type === 'agent.tool_use');
      expect(a!.body.evaluated_permission).toBe('ask');
      const allowed = await f.asOwn('POST', f.events, {
        events: [{ type: 'user.tool_confirmation', tool_use_id: a!.id, result: 'allow', deny_message: null }],
      });
      expect(allowed.status).toBe(200);
      let log = await eventsOf(t.db, f.sessionId);
      expect(log.at(-1)).toMatchObject({
        type: 'user.tool_confirmation',
        body: { tool_use_id: a!.id, result: 'allow' },
      });
      expect(log.at(-1)!.body).not.toHaveProperty('deny_message');
      const denied = await f.ok<{ data: WireEvent[] }>('POST', f.events, {
        events: [
          { type: 'user.tool_confirmation', tool_use_id: b!.id, result: 'deny', deny_message: 'not there' },
        ],
      });
      expect(denied.data).toEqual([
        expect.objectContaining({
          type: 'user.tool_confirmation',
          result: 'deny',
          deny_message: 'not there',
        }),
      ]);
      log = await eventsOf(t.db, f.sessionId);
      expect(log.slice(-2).map((e) => [e.type, e.body])).toEqual([
        [
          'user.tool_result',
          { tool_use_id: b!.id, content: [{ type: 'text', text: 'not there' }], is_error: true },
        ],
        [
          'session.status_idle',
          { stop_reason: { type: 'requires_action', event_ids: [a!.id] }, stop_details: null },
        ],
      ]);
      // A different verdict on a call already judged (and answered) is refused.
      const again = await f.call('POST', f.events, {
        events: [{ type: 'user.tool_confirmation', tool_use_id: b!.id, result: 'allow' }],
      });
      expect((await expectError(again, 400, 'invalid_request_error')).error.message).toMatch(
        /already confirmed with deny/,
      );
    });

    it('user.interrupt stops the session’s live work and answers its open calls with an error', async () => {
      const f = await fixture();
      const { bash, lookup } = await twoCalls(f.sessionId, f);
      const res = await f.ok<{ data: WireEvent[] }>('POST', f.events, {
        events: [{ type: 'user.interrupt' }],
      });
      expect(res.data).toEqual([
        { id: expect.any(String), type: 'user.interrupt', processed_at: expect.stringMatching(WIRE_STAMP) },
      ]);
      const log = await eventsOf(t.db, f.sessionId);
      const answers = log.filter((e) => e.type.endsWith('tool_result'));
      expect(answers.map((e) => [e.body.tool_use_id ?? e.body.custom_tool_use_id, e.body.is_error])).toEqual([
        [bash.id, true],
        [lookup.id, true],
      ]);
      expect((await workOf(t.db, f.sessionId)).every((w) => w.state === 'stopped')).toBe(true);
    });

    it('a result repeated word for word is a 200 that answers with the first event and writes nothing, however its defaults are spelled', async () => {
      const f = await fixture();
      const { bash } = await twoCalls(f.sessionId, f);
      const result = {
        type: 'user.tool_result',
        tool_use_id: bash.id,
        content: [{ type: 'text', text: 'ok' }],
      };
      const first = await f.asOwn('POST', f.events, { events: [result] });
      const stored = ((await first.json()) as { data: WireEvent[] }).data[0]!;
      const before = await sessionState(t.db, f.sessionId);
      const spellings = [
        result,
        { ...result, is_error: false },
        { ...result, is_error: null },
        {
          is_error: false,
          content: [{ text: 'ok', type: 'text' }],
          tool_use_id: bash.id,
          type: 'user.tool_result',
        },
      ];
      for (const again of spellings) {
        for (const post of [f.asOwn, (m: string, p: string, b?: unknown) => f.call(m, p, b)]) {
          const res = await post('POST', f.events, { events: [again] });
          expect(res.status, JSON.stringify(again)).toBe(200);
          expect(((await res.json()) as { data: WireEvent[] }).data).toEqual([stored]);
        }
      }
      // Twice in one post: one answer.
      const twice = await f.asOwn('POST', f.events, { events: [result, result] });
      expect(((await twice.json()) as { data: WireEvent[] }).data).toEqual([stored, stored]);
      expect(await sessionState(t.db, f.sessionId)).toEqual(before);
    });

    it('a different result for an answered call is a 400 (never a 409) and writes nothing', async () => {
      const f = await fixture();
      const { bash, lookup } = await twoCalls(f.sessionId, f);
      const result = {
        type: 'user.tool_result',
        tool_use_id: bash.id,
        content: [{ type: 'text', text: 'ok' }],
      };
      await f.ok('POST', f.events, { events: [result] });
      await f.ok('POST', f.events, {
        events: [{ type: 'user.custom_tool_result', custom_tool_use_id: lookup.id }],
      });
      const before = await sessionState(t.db, f.sessionId);
      const different = [
        { ...result, content: [{ type: 'text', text: 'not ok' }] },
        { ...result, is_error: true },
        { type: 'user.tool_result', tool_use_id: bash.id },
        {
          type: 'user.custom_tool_result',
          custom_tool_use_id: lookup.id,
          content: [{ type: 'text', text: 'x' }],
        },
      ];
      for (const event of different) {
        const res = await f.asOwn('POST', f.events, { events: [event] });
        expect(res.status, JSON.stringify(event)).toBe(400);
        expect((await expectError(res, 400, 'invalid_request_error')).error.message).toMatch(
          /already answered/,
        );
      }
      expect(await sessionState(t.db, f.sessionId)).toEqual(before);
    });

    it('refuses what it cannot take — unknown types, unknown or mismatched calls, conflicts, oversize, too many — and writes nothing, not even the valid events before it', async () => {
      const f = await fixture();
      const { bash, lookup } = await twoCalls(f.sessionId, f);
      const ok = { type: 'user.tool_result', tool_use_id: bash.id, content: [{ type: 'text', text: 'ok' }] };
      const before = await sessionState(t.db, f.sessionId);
      const cases: Array<[string, unknown, number, RegExp]> = [
        ['an unknown type', { events: [{ type: 'user.bogus' }] }, 400, /events\.0\.type/],
        [
          'the SDK’s system.message',
          { events: [{ type: 'system.message', content: [] }] },
          400,
          /events\.0\.type/,
        ],
        ['an agent event', { events: [{ type: 'agent.message', content: [] }] }, 400, /events\.0\.type/],
        ['a status event', { events: [ok, { type: 'session.status_idle' }] }, 400, /events\.1\.type/],
        [
          'define_outcome',
          {
            events: [
              ok,
              { type: 'user.define_outcome', description: 'x', rubric: { type: 'text', content: 'y' } },
            ],
          },
          400,
          /events\.1: user\.define_outcome/,
        ],
        [
          'a result for an unknown call',
          { events: [ok, { type: 'user.tool_result', tool_use_id: 'sevt_0000000000000000000000zz' }] },
          400,
          /no agent\.tool_use sevt_0000000000000000000000zz/,
        ],
        [
          'the model’s tool_use id in place of the call’s event id',
          { events: [{ type: 'user.tool_result', tool_use_id: 'toolu_1' }] },
          400,
          /no agent\.tool_use toolu_1/,
        ],
        [
          'a built-in result for a custom call',
          { events: [{ type: 'user.tool_result', tool_use_id: lookup.id }] },
          400,
          /no agent\.tool_use/,
        ],
        [
          'a custom result for a built-in call',
          { events: [{ type: 'user.custom_tool_result', custom_tool_use_id: bash.id }] },
          400,
          /no agent\.custom_tool_use/,
        ],
        [
          'a confirmation for an unknown call',
          { events: [{ type: 'user.tool_confirmation', tool_use_id: 'sevt_nope', result: 'allow' }] },
          400,
          /no tool call sevt_nope/,
        ],
        [
          'a message, then a result for a user event',
          { events: [message('hi'), { type: 'user.tool_result', tool_use_id: bash.id }] },
          400,
          // The message answers the open call (superseded) before the result arrives.
          /already answered with a different result/,
        ],
        [
          'conflicting results in one post',
          { events: [ok, { ...ok, content: [{ type: 'text', text: 'other' }] }] },
          400,
          /already answered with a different result/,
        ],
        ['no events', { events: [] }, 400, /events/],
        ['51 events', { events: Array.from({ length: 51 }, (_, i) => message(`m${i}`)) }, 400, /events/],
        ['no events field', {}, 400, /events/],
        ['events not a list', { events: message('x') }, 400, /events/],
        ['an unknown field', { events: [{ ...ok, id: 'sevt_mine' }] }, 400, /unknown field "events\.0\.id"/],
        ['an empty message', { events: [{ type: 'user.message', content: [] }] }, 400, /events\.0\.content/],
        [
          'a confirmation without a verdict',
          { events: [{ type: 'user.tool_confirmation', tool_use_id: bash.id }] },
          400,
          /result/,
        ],
        ['not JSON', '{"events": [', 400, /not valid JSON/],
        [
          'a body over the cap',
          { events: [message('x'.repeat(MAX_BODY_BYTES))] },
          413,
          new RegExp(`larger than ${MAX_BODY_BYTES} bytes`),
        ],
      ];
      for (const [what, body, status, pattern] of cases) {
        for (const post of [f.asOwn, (m: string, p: string, b?: unknown) => f.call(m, p, b)]) {
          const res = await post('POST', f.events, body);
          // The worker's key may not send a message at all: 403 before anything else is judged.
          if (post === f.asOwn && what === 'a message, then a result for a user event') {
            await expectError(res, 403, 'permission_error');
            continue;
          }
          expect(res.status, what).toBe(status);
          const err = await expectError(
            res,
            status,
            status === 413 ? 'request_too_large' : 'invalid_request_error',
          );
          expect(err.error.message, what).toMatch(pattern);
        }
      }
      expect(await sessionState(t.db, f.sessionId)).toEqual(before);
    });

    it('the same result from two workers at once is stored once; of two different results exactly one wins and the other is a 400', async () => {
      const f = await fixture();
      const { bash, lookup } = await twoCalls(f.sessionId, f);
      const same = {
        type: 'user.tool_result',
        tool_use_id: bash.id,
        content: [{ type: 'text', text: 'ok' }],
      };
      const twins = await Promise.all([1, 2, 3].map(() => f.asOwn('POST', f.events, { events: [same] })));
      expect(twins.map((r) => r.status)).toEqual([200, 200, 200]);
      const bodies = await Promise.all(
        twins.map(async (r) => ((await r.json()) as { data: WireEvent[] }).data),
      );
      expect(bodies[1]).toEqual(bodies[0]);
      expect(bodies[2]).toEqual(bodies[0]);

      const rivals = ['one', 'two', 'three'].map((text) => ({
        type: 'user.custom_tool_result',
        custom_tool_use_id: lookup.id,
        content: [{ type: 'text', text }],
      }));
      const raced = await Promise.all(rivals.map((r) => f.asOwn('POST', f.events, { events: [r] })));
      expect(raced.map((r) => r.status).sort()).toEqual([200, 400, 400]);
      const winner = raced.findIndex((r) => r.status === 200);
      const log = await eventsOf(t.db, f.sessionId);
      const answers = log.filter(
        (e) => e.type === 'user.tool_result' || e.type === 'user.custom_tool_result',
      );
      expect(answers.map((e) => e.body)).toEqual([
        { tool_use_id: bash.id, content: same.content, is_error: false },
        { custom_tool_use_id: lookup.id, content: rivals[winner]!.content, is_error: false },
      ]);
      // The last answer enqueued the next turn exactly once.
      expect(
        (await workOf(t.db, f.sessionId)).filter((w) => w.kind === 'model_turn' && w.state === 'queued'),
      ).toHaveLength(1);
    });

    it('messages posted at once from many clients are all appended, numbered densely, behind one model_turn', async () => {
      const f = await fixture();
      const posted = await Promise.all(
        Array.from({ length: 12 }, (_, i) => f.call('POST', f.events, { events: [message(`m${i}`)] })),
      );
      expect(posted.map((r) => r.status)).toEqual(Array(12).fill(200));
      const log = await eventsOf(t.db, f.sessionId);
      expect(log.map((e) => e.seq)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
      expect(new Set(log.map((e) => (e.body.content as Array<{ text: string }>)[0]!.text)).size).toBe(12);
      expect((await workOf(t.db, f.sessionId)).map((w) => [w.kind, w.state])).toEqual([
        ['model_turn', 'queued'],
      ]);
    });

    it('takes 50 events in one post, and a message of a million characters under the body cap', async () => {
      const f = await fixture();
      const fifty = await f.ok<{ data: WireEvent[] }>('POST', f.events, {
        events: Array.from({ length: 50 }, (_, i) => message(`m${i}`)),
      });
      expect(fifty.data.map((e) => (e.content as Array<{ text: string }>)[0]!.text)).toEqual(
        Array.from({ length: 50 }, (_, i) => `m${i}`),
      );
      await f.ok('POST', f.events, { events: [message('y'.repeat(1_000_000))] });
      const log = await eventsOf(t.db, f.sessionId);
      expect(log.map((e) => e.seq)).toEqual(Array.from({ length: 51 }, (_, i) => i + 1));
      expect((await workOf(t.db, f.sessionId)).map((w) => w.kind)).toEqual(['model_turn']);
    });

    it('an environment key posting a user.message or user.interrupt is a 403 and writes nothing', async () => {
      const f = await fixture();
      const { bash } = await twoCalls(f.sessionId, f);
      const before = await sessionState(t.db, f.sessionId);
      const bodies = [
        { events: [message('hi')] },
        { events: [{ type: 'user.interrupt' }] },
        // A permitted event first does not carry the forbidden one through.
        { events: [{ type: 'user.tool_result', tool_use_id: bash.id }, message('and also')] },
      ];
      for (const body of bodies) {
        const err = await expectError(await f.asOwn('POST', f.events, body), 403, 'permission_error');
        expect(err.error.message).toMatch(
          /user\.tool_result, user\.custom_tool_result, user\.tool_confirmation/,
        );
      }
      expect(await sessionState(t.db, f.sessionId)).toEqual(before);
    });

    it('a terminated session takes no events', async () => {
      const f = await fixture();
      await t.db.execute(sql`UPDATE sessions SET status = 'terminated' WHERE id = ${f.sessionId}`);
      const before = await sessionState(t.db, f.sessionId);
      const res = await f.call('POST', f.events, { events: [message('hello?')] });
      expect((await expectError(res, 400, 'invalid_request_error')).error.message).toMatch(/terminated/);
      expect(await sessionState(t.db, f.sessionId)).toEqual(before);
    });
  });

  describe('scope', () => {
    it("another environment's key gets exactly the missing session's answer on every session route, and writes nothing", async () => {
      const f = await fixture();
      const { bash } = await twoCalls(f.sessionId, f);
      const before = await sessionState(t.db, f.sessionId);
      const routes = (id: string): Array<[string, string, unknown?]> => [
        ['GET', `/v1/sessions/${id}`],
        ['GET', `/v1/sessions/${id}/events`],
        ['GET', `/v1/sessions/${id}/events?limit=1000&order=desc`],
        ['GET', `/v1/sessions/${id}/events/stream`],
        [
          'POST',
          `/v1/sessions/${id}/events`,
          { events: [{ type: 'user.tool_result', tool_use_id: bash.id }] },
        ],
        [
          'POST',
          `/v1/sessions/${id}/events`,
          { events: [{ type: 'user.tool_confirmation', tool_use_id: bash.id, result: 'deny' }] },
        ],
        ['POST', `/v1/sessions/${id}/events`, { events: [message('hi')] }],
        ['POST', `/v1/sessions/${id}/events`, { events: [{ type: 'user.interrupt' }] }],
        ['POST', `/v1/sessions/${id}`, { title: 'stolen' }],
        ['POST', `/v1/sessions/${id}/archive`],
        ['DELETE', `/v1/sessions/${id}`],
      ];
      const real = routes(f.sessionId);
      const missing = routes(UNKNOWN_SESSION);
      for (let i = 0; i < real.length; i++) {
        const [method, path, body] = real[i]!;
        const got = await answer(await f.asForeign(method, path, body));
        const [mm, mp, mb] = missing[i]!;
        expect(got, `${method} ${path}`).toEqual(await answer(await f.asForeign(mm, mp, mb)));
        // What an environment key may call at all answers 404; the rest refuse the key itself.
        const envRoute = method === 'GET' || path.endsWith('/events');
        expect(got.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(envRoute ? 404 : 401);
      }
      expect(await sessionState(t.db, f.sessionId)).toEqual(before);
    });

    it('a session the platform lane opened is a 404 on every events route, to the admin and its own key alike, and gets nothing written', async () => {
      const f = await fixture();
      const lane = await platformSession(t.db, f.environmentId);
      const before = await sessionState(t.db, lane);
      const routes: Array<[string, string, unknown?]> = [
        ['GET', `/v1/sessions/${lane}/events`],
        ['GET', `/v1/sessions/${lane}/events/stream`],
        ['POST', `/v1/sessions/${lane}/events`, { events: [message('hi')] }],
        ['POST', `/v1/sessions/${lane}/events`, { events: [{ type: 'user.interrupt' }] }],
        [
          'POST',
          `/v1/sessions/${lane}/events`,
          { events: [{ type: 'user.tool_result', tool_use_id: 'sevt_x' }] },
        ],
      ];
      for (const [method, path, body] of routes) {
        for (const post of [f.asOwn, (m: string, p: string, b?: unknown) => f.call(m, p, b)]) {
          expect(
            await answer(await post(method, path, body)),
            `${method} ${path} ${JSON.stringify(body)}`,
          ).toEqual({
            status: 404,
            type: 'not_found_error',
            message: 'session not found',
          });
        }
      }
      expect(await sessionState(t.db, lane)).toEqual(before);
    });
  });

  describe('GET /v1/sessions/{id}/events/stream (polling, as on Workers)', () => {
    /** The stream's SSE frames as they arrive. */
    function frames(res: Response) {
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      const queue: Array<{ event: string; data: string }> = [];
      let ended = false;
      async function fill(): Promise<void> {
        const { value, done } = await reader.read();
        if (done) {
          ended = true;
          return;
        }
        buffer += value;
        let cut = buffer.indexOf('\n\n');
        while (cut >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          let event = 'message';
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith('event:')) event = line.slice(6).trim();
            else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
          }
          queue.push({ event, data: data.join('\n') });
          cut = buffer.indexOf('\n\n');
        }
      }
      return {
        /** The next frame, or null when the stream ended; fails after `ms`. */
        async next(ms = 10_000): Promise<{ event: string; data: string } | null> {
          const deadline = Date.now() + ms;
          while (queue.length === 0 && !ended) {
            if (Date.now() > deadline) throw new Error('no frame in time');
            await Promise.race([fill(), new Promise((r) => setTimeout(r, deadline - Date.now()))]);
          }
          return queue.shift() ?? null;
        },
        cancel: () => reader.cancel().catch(() => {}),
      };
    }

    it('sends what is appended after it opens, in order, as `event: <type>` frames of the wire event; a deletion ends it with session.deleted', async () => {
      const f = await fixture();
      await f.ok('POST', f.events, { events: [message('before the stream')] });
      const res = await f.asOwn('GET', `${f.events}/stream`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const stream = frames(res);
      try {
        const sent = await f.ok<{ data: WireEvent[] }>('POST', f.events, {
          events: [message('one'), message('two')],
        });
        await f.ok('POST', f.events, { events: [{ type: 'user.interrupt' }] });
        const got: WireEvent[] = [];
        for (let i = 0; i < 3; i++) {
          const frame = (await stream.next())!;
          const event = JSON.parse(frame.data) as WireEvent;
          expect(frame.event).toBe(event.type);
          got.push(event);
        }
        const log = (await eventsOf(t.db, f.sessionId)).map((e) => toWireEvent(e));
        expect(got.slice(0, 2)).toEqual(sent.data);
        expect(got).toEqual(log.slice(1, 4));
        await f.ok('DELETE', `/v1/sessions/${f.sessionId}`);
        const last = (await stream.next())!;
        expect(last.event).toBe('session.deleted');
        expect(JSON.parse(last.data)).toEqual({
          id: expect.stringMatching(/^sevt_/),
          type: 'session.deleted',
          processed_at: expect.stringMatching(WIRE_STAMP),
        });
        expect(await stream.next()).toBeNull();
      } finally {
        await stream.cancel();
      }
    });

    it('an append larger than a read batch arrives whole and in order; session.status_terminated ends the stream', async () => {
      const f = await fixture();
      const stream = frames(await f.asOwn('GET', `${f.events}/stream`));
      try {
        const burst = await appendEvents(
          t.db,
          f.sessionId,
          Array.from({ length: 1_234 }, (_, i) => ({ type: 'agent.message', body: { n: i } })),
        );
        const got: number[] = [];
        for (let i = 0; i < 1_234; i++)
          got.push((JSON.parse((await stream.next())!.data) as { n: number }).n);
        expect(got).toEqual(burst!.map((e) => e.body.n));
        await appendEvents(t.db, f.sessionId, [{ type: 'session.status_terminated', body: {} }], {
          status: 'terminated',
        });
        expect((await stream.next())!.event).toBe('session.status_terminated');
        expect(await stream.next()).toBeNull();
      } finally {
        await stream.cancel();
      }
    });

    it('a failure mid-stream ends it with one generic error frame that reveals nothing of the failure', async () => {
      const f = await fixture();
      const res = await f.asOwn('GET', `${f.events}/stream`);
      const stream = frames(res);
      try {
        // An event the stream cannot frame (an SSE event name cannot hold a line break): a
        // stand-in for any failure inside the stream, such as the database going away.
        await appendEvents(t.db, f.sessionId, [{ type: 'internal\nsecret detail', body: {} }]);
        const error = (await stream.next())!;
        expect(error.event).toBe('error');
        expect(JSON.parse(error.data)).toEqual({
          type: 'error',
          error: { type: 'api_error', message: 'the event stream failed' },
        });
        expect(await stream.next()).toBeNull();
      } finally {
        await stream.cancel();
      }
    });
  });
});
