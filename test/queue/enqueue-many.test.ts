import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { rows, type SqlHandle } from '../../src/db/handle.js';
import {
  claim,
  complete,
  ENQUEUE_MANY_MAX,
  type EnqueueInput,
  enqueue,
  enqueueMany,
  UnknownSessionError,
  type WorkKind,
} from '../../src/queue/index.js';
import { useTestDb } from '../helpers/db.js';
import { countWork, createSession, readStoredWork, readWork, setupSession } from '../helpers/factories.js';
import { listenToWork } from '../helpers/listen.js';
import { untilSomeoneWaitsForALock } from '../helpers/locks.js';
import { registerContextManager, TEST_SPAN, underSpan } from '../helpers/otel-context.js';
import { capture, genericPlan } from '../helpers/plans.js';

registerContextManager();

const SPAN = TEST_SPAN;

/** A handle that fails the test if anything reaches the database. */
const untouchable: SqlHandle = {
  execute: () => {
    throw new Error('no statement expected');
  },
};

async function until(done: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function lanes(db: SqlHandle, ids: string[]): Promise<string[]> {
  const found = await rows<{ id: string; lane: string }>(
    db,
    sql`SELECT id, lane FROM work_items WHERE id IN (SELECT jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))`,
  );
  const byId = new Map(found.map((r) => [r.id, r.lane]));
  return ids.map((id) => byId.get(id) ?? 'missing');
}

describe.each(['pg', 'pglite'] as const)('enqueueMany (%s)', (driver) => {
  const t = useTestDb(driver);

  it('answers one new queued item per input, in input order', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    const other = await createSession(t.db, environmentId);
    const inputs: EnqueueInput[] = [
      { environmentId, sessionId: other, kind: 'web_exec' },
      { environmentId, sessionId, kind: 'model_turn' },
      { environmentId, sessionId: other, kind: 'model_turn' },
      { environmentId, sessionId, kind: 'mcp_exec' },
    ];
    const results = await enqueueMany(t.db, inputs);
    expect(results.map((r) => [r.work.sessionId, r.work.kind])).toEqual(
      inputs.map((i) => [i.sessionId, i.kind]),
    );
    expect(results.every((r) => r.created)).toBe(true);
    for (const { work } of results) {
      expect(work).toMatchObject({ environmentId, state: 'queued', metadata: {}, leaseExpiresAt: null });
      expect(work.id).toMatch(/^work_[0-9a-hjkmnp-tv-z]{24}$/);
      expect(work.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/);
      expect(await readWork(t.db, work.id)).toMatchObject({ state: 'queued' });
    }
    expect(new Set(results.map((r) => r.work.id)).size).toBe(4);
    expect(await countWork(t.db)).toBe(4);
  });

  it('answers the live item that already covers an input, not created, and creates the others', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    const live = await enqueue(t.db, { environmentId, sessionId, kind: 'model_turn' });
    await claim(t.db, 'model_turn', 60_000); // an active item holds the slot as a queued one does
    const [covered, fresh] = await enqueueMany(t.db, [
      { environmentId, sessionId, kind: 'model_turn', metadata: { ignored: 'yes' } },
      { environmentId, sessionId, kind: 'tool_exec' },
    ]);
    expect(covered).toMatchObject({
      created: false,
      work: { id: live.work.id, state: 'active', metadata: {} },
    });
    expect(fresh!.created).toBe(true);
    expect(await countWork(t.db)).toBe(2);
  });

  it('answers every input its own item when live and new slots interleave across environments', async () => {
    const a = await setupSession(t.db, 'cloud');
    const b = await setupSession(t.db, 'self_hosted');
    const a2 = await createSession(t.db, a.environmentId);
    const liveA = await enqueue(t.db, { ...a, kind: 'web_exec' });
    const liveB = await enqueue(t.db, { ...b, kind: 'tool_exec' });
    const inputs: EnqueueInput[] = [
      { ...a, kind: 'model_turn' },
      { ...b, kind: 'tool_exec' },
      { environmentId: a.environmentId, sessionId: a2, kind: 'web_exec' },
      { ...a, kind: 'web_exec' },
      { ...b, kind: 'model_turn' },
      { ...b, kind: 'tool_exec' },
    ];
    const results = await enqueueMany(t.db, inputs);
    expect(results.map((r) => r.created)).toEqual([true, false, true, false, true, false]);
    expect(results[1]!.work.id).toBe(liveB.work.id);
    expect(results[3]!.work.id).toBe(liveA.work.id);
    expect(results[5]!.work.id).toBe(liveB.work.id);
    for (const [i, { work }] of results.entries()) {
      expect([work.environmentId, work.sessionId, work.kind]).toEqual([
        inputs[i]!.environmentId,
        inputs[i]!.sessionId,
        inputs[i]!.kind,
      ]);
    }
    expect(new Set(results.map((r) => r.work.id)).size).toBe(5);
    expect(await countWork(t.db)).toBe(5);
  });

  it('a finished item no longer holds the slot: the batch creates a new one', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    const first = await enqueue(t.db, { environmentId, sessionId, kind: 'model_turn' });
    await complete(t.db, (await claim(t.db, 'model_turn', 60_000))!);
    const [again] = await enqueueMany(t.db, [{ environmentId, sessionId, kind: 'model_turn' }]);
    expect(again!.created).toBe(true);
    expect(again!.work.id).not.toBe(first.work.id);
  });

  it('creates a (session, kind) repeated in the batch once; the first input wins, repeats get its item', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    const results = await enqueueMany(t.db, [
      { environmentId, sessionId, kind: 'tool_exec', metadata: { n: '1' } },
      { environmentId, sessionId, kind: 'web_exec' },
      { environmentId, sessionId, kind: 'tool_exec', metadata: { n: '2' } },
      { environmentId, sessionId, kind: 'tool_exec', metadata: { n: '3' } },
    ]);
    expect(results.map((r) => r.created)).toEqual([true, true, false, false]);
    expect(results[2]!.work.id).toBe(results[0]!.work.id);
    expect(results[3]!.work.id).toBe(results[0]!.work.id);
    expect(results[3]!.work.metadata).toEqual({ n: '1' });
    expect(await countWork(t.db)).toBe(2);
  });

  it('puts exactly a self_hosted tool_exec on the poll lane and everything else on the claim lane', async () => {
    const selfHosted = await setupSession(t.db, 'self_hosted');
    const cloud = await setupSession(t.db, 'cloud');
    const kinds: WorkKind[] = ['tool_exec', 'model_turn', 'web_exec'];
    const results = await enqueueMany(t.db, [
      ...kinds.map((kind) => ({ ...selfHosted, kind })),
      ...kinds.map((kind) => ({ ...cloud, kind })),
    ]);
    const ids = results.map((r) => r.work.id);
    expect(await lanes(t.db, ids)).toEqual(['poll', 'claim', 'claim', 'claim', 'claim', 'claim']);
  });

  it.each([
    [
      'rejects the whole batch for an unknown session, an unknown environment or a session bound elsewhere',
      false,
    ],
    [
      'inside a transaction, an unbound input fails the batch and the transaction, named as the input the database refused',
      true,
    ],
  ] as const)('%s', async (_, inTransaction) => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    const { environmentId: otherEnv, sessionId: otherSession } = await setupSession(t.db, 'cloud');
    // The live item makes the foreign-session input a conflict rather than a failed insert.
    await enqueue(t.db, { environmentId, sessionId, kind: 'model_turn' });
    const good: EnqueueInput = { environmentId: otherEnv, sessionId: otherSession, kind: 'web_exec' };
    const bad: EnqueueInput[] = [
      // Refused by the foreign key of the row each would insert.
      { environmentId, sessionId: 'sesn_missing', kind: 'tool_exec' },
      { environmentId: 'env_missing', sessionId, kind: 'tool_exec' },
      { environmentId: otherEnv, sessionId, kind: 'tool_exec' },
      // Kept out by the live item of another environment, and refused for it.
      { environmentId: otherEnv, sessionId, kind: 'model_turn' },
    ];
    for (const input of bad) {
      const batch = [good, input, good];
      const failure = inTransaction
        ? t.db.transaction(async (tx) => {
            await enqueue(tx, { ...good, kind: 'mcp_exec' });
            await enqueueMany(tx, batch);
          })
        : enqueueMany(t.db, batch);
      await expect(failure).rejects.toThrow(UnknownSessionError);
      await expect(failure).rejects.toMatchObject({
        sessionId: input.sessionId,
        environmentId: input.environmentId,
      });
    }
    expect(await countWork(t.db)).toBe(1);
  });

  it('names the first unbound input in input order when several are unbound, and writes nothing', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    const inputs: EnqueueInput[] = [
      { environmentId, sessionId, kind: 'model_turn' },
      { environmentId, sessionId: 'sesn_zz_missing', kind: 'model_turn' },
      { environmentId, sessionId: 'sesn_aa_missing', kind: 'model_turn' },
    ];
    // Key order (which the insert follows) would put sesn_aa first; the error names input 1.
    await expect(enqueueMany(t.db, inputs)).rejects.toMatchObject({ sessionId: 'sesn_zz_missing' });
    await expect(enqueueMany(t.db, [inputs[0]!, inputs[2]!, inputs[1]!])).rejects.toMatchObject({
      sessionId: 'sesn_aa_missing',
    });
    expect(await countWork(t.db)).toBe(0);
  });

  it('projects string metadata, and a non-string value fails the batch before any statement', async () => {
    const { environmentId, sessionId } = await setupSession(t.db);
    const [result] = await enqueueMany(t.db, [
      { environmentId, sessionId, kind: 'tool_exec', metadata: { origin: 'turn-7', empty: '' } },
    ]);
    expect(result!.work.metadata).toEqual({ origin: 'turn-7', empty: '' });
    await expect(
      enqueueMany(untouchable, [
        { environmentId, sessionId, kind: 'web_exec' },
        { environmentId, sessionId, kind: 'mcp_exec', metadata: { n: 5 as unknown as string } },
      ]),
    ).rejects.toThrow(TypeError);
  });

  it('answers every new item exactly as the row stores it: every field in order, object keys in jsonb order', async () => {
    const cloud = await setupSession(t.db, 'cloud');
    const selfHosted = await setupSession(t.db, 'self_hosted');
    // Given out of jsonb's order (shorter keys first, then bytewise; é is two bytes).
    const metadata = { zeta: '1', é: '2', bb: '3', b: '4', a: '' };
    const traceContext = { tracestate: 'k=v', traceparent: `00-${SPAN.traceId}-00f067aa0ba902b7-01` };
    const results = await enqueueMany(t.db, [
      { ...cloud, kind: 'model_turn', metadata },
      { ...selfHosted, kind: 'tool_exec', metadata, traceContext },
      { ...cloud, kind: 'web_exec', traceContext },
      { ...cloud, kind: 'model_turn' }, // a repeat: the first input's item
    ]);
    expect(results.map((r) => r.created)).toEqual([true, true, true, false]);
    for (const { work } of results) {
      expect(JSON.stringify(work)).toBe(JSON.stringify(await readStoredWork(t.db, work.id)));
    }
    expect(Object.keys(results[0]!.work.metadata)).toEqual(['a', 'b', 'bb', 'é', 'zeta']);
    expect(results[3]!.work).toBe(results[0]!.work);
    // The answer is the items' own: the caller's objects are neither returned nor reordered.
    expect(results[0]!.work.metadata).not.toBe(metadata);
    expect(Object.keys(metadata)).toEqual(['zeta', 'é', 'bb', 'b', 'a']);
    expect(results[2]!.work.traceContext).not.toBe(traceContext);
  });

  it('captures the active span as trace context for exec kinds only; a given one wins', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    const given = { traceparent: `00-${SPAN.traceId}-00f067aa0ba902b7-01` };
    const [traced, turn, explicit, cleared] = await underSpan(() =>
      enqueueMany(t.db, [
        { environmentId, sessionId, kind: 'tool_exec' },
        { environmentId, sessionId, kind: 'model_turn' },
        { environmentId, sessionId, kind: 'web_exec', traceContext: given },
        { environmentId, sessionId, kind: 'mcp_exec', traceContext: null },
      ]),
    );
    expect(traced!.work.traceContext).toEqual({ traceparent: `00-${SPAN.traceId}-${SPAN.spanId}-01` });
    expect(turn!.work.traceContext).toBeNull();
    expect(explicit!.work.traceContext).toEqual(given);
    expect(cleared!.work.traceContext).toBeNull();
    const [untraced] = await enqueueMany(t.db, [{ environmentId, sessionId, kind: 'outputs_harvest' }]);
    expect(untraced!.work.traceContext).toBeNull();
    // Stored as SQL NULL, never a JSON null.
    const [nulls] = await rows<{ n: number }>(
      t.db,
      sql`SELECT count(*)::int AS n FROM work_items WHERE trace_context IS NULL`,
    );
    expect(nulls!.n).toBe(3);
  });

  it('joins the caller transaction: a rollback leaves no item behind', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    await expect(
      t.db.transaction(async (tx) => {
        await enqueueMany(tx, [
          { environmentId, sessionId, kind: 'model_turn' },
          { environmentId, sessionId, kind: 'tool_exec' },
        ]);
        throw new Error('settlement failed');
      }),
    ).rejects.toThrow('settlement failed');
    expect(await countWork(t.db)).toBe(0);
  });

  it('answers [] for an empty batch without a statement', async () => {
    expect(await enqueueMany(untouchable, [])).toEqual([]);
  });

  it(`refuses more than ${ENQUEUE_MANY_MAX} inputs before any statement`, async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    const input: EnqueueInput = { environmentId, sessionId, kind: 'model_turn' };
    await expect(enqueueMany(untouchable, Array(ENQUEUE_MANY_MAX + 1).fill(input))).rejects.toThrow(
      RangeError,
    );
    // The cap itself is allowed (here: one item and its repeats).
    const results = await enqueueMany(t.db, Array(ENQUEUE_MANY_MAX).fill(input));
    expect(results).toHaveLength(ENQUEUE_MANY_MAX);
    expect(results.filter((r) => r.created)).toHaveLength(1);
  });
});

describe('enqueueMany on real PostgreSQL connections', () => {
  const t = useTestDb('pg', { poolSize: 20 });

  it('concurrent batches over the same slots, in any order, create each item once and never deadlock', async () => {
    const { environmentId } = await setupSession(t.db, 'cloud');
    const sessions = Array.from({ length: ENQUEUE_MANY_MAX }, (_, i) => `sesn_race${i}`);
    await t.db.execute(
      sql`INSERT INTO sessions (id, environment_id)
          SELECT jsonb_array_elements_text(${JSON.stringify(sessions)}::jsonb), ${environmentId}`,
    );
    const inputs = sessions.map((sessionId) => ({ environmentId, sessionId, kind: 'model_turn' as const }));
    const batches = await Promise.all(
      Array.from({ length: 8 }, (_, b) =>
        enqueueMany(t.db, b % 2 ? [...inputs].reverse() : [...inputs.slice(b), ...inputs.slice(0, b)]),
      ),
    );
    const created = batches.flat().filter((r) => r.created);
    expect(created).toHaveLength(sessions.length);
    for (const results of batches) {
      const ids = new Map(results.map((r) => [r.work.sessionId, r.work.id]));
      expect(ids).toEqual(new Map(created.map((r) => [r.work.sessionId, r.work.id])));
    }
    expect(await countWork(t.db)).toBe(sessions.length);
  });

  it('single enqueues racing batches for the same slots leave one live item per slot, named by every answer', async () => {
    const { environmentId } = await setupSession(t.db, 'cloud');
    const sessions = Array.from({ length: 200 }, (_, i) => `sesn_mixed${i}`);
    await t.db.execute(
      sql`INSERT INTO sessions (id, environment_id)
          SELECT jsonb_array_elements_text(${JSON.stringify(sessions)}::jsonb), ${environmentId}`,
    );
    const kinds: WorkKind[] = ['model_turn', 'tool_exec'];
    const inputs = sessions.flatMap((sessionId) => kinds.map((kind) => ({ environmentId, sessionId, kind })));
    const singles = inputs.filter((_, i) => i % 3 === 0);
    const answers = await Promise.all([
      enqueueMany(t.db, inputs),
      enqueueMany(t.db, [...inputs].reverse()),
      ...singles.map((input) => enqueue(t.db, input).then((r) => [r])),
      enqueueMany(t.db, inputs.slice(100)),
    ]);
    const all = answers.flat();
    const live = await rows<{ session_id: string; kind: string; id: string }>(
      t.db,
      sql`SELECT session_id, kind, id FROM work_items WHERE state IN ('queued', 'starting', 'active')`,
    );
    expect(live).toHaveLength(inputs.length);
    const idOf = new Map(live.map((r) => [`${r.session_id}/${r.kind}`, r.id]));
    for (const { work } of all) expect(work.id).toBe(idOf.get(`${work.sessionId}/${work.kind}`));
    expect(all.filter((r) => r.created)).toHaveLength(inputs.length);
    expect(await countWork(t.db)).toBe(inputs.length);
  });

  it('an input bound elsewhere whose slot a racing transaction fills is refused, and nothing of the batch stays', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    const { environmentId: otherEnv, sessionId: otherSession } = await setupSession(t.db, 'cloud');
    const racer = await t.pool!.connect();
    try {
      // The racing live item of `sessionId`, not yet committed when the batch's statement begins.
      await racer.query('BEGIN');
      await racer.query(
        `INSERT INTO work_items (id, environment_id, session_id, kind, lane) VALUES ($1, $2, $3, 'model_turn', 'claim')`,
        ['work_racer', environmentId, sessionId],
      );
      const batch = enqueueMany(t.db, [
        { environmentId: otherEnv, sessionId: otherSession, kind: 'web_exec' },
        // Bound to `environmentId`, not `otherEnv`: its insert waits for the racer, then conflicts
        // with an item the statement, begun earlier, cannot see.
        { environmentId: otherEnv, sessionId, kind: 'model_turn' },
      ]);
      let settled = false;
      batch.then(
        () => (settled = true),
        () => (settled = true),
      );
      // Either the statement waits for the racer, or it failed without inserting at all.
      await untilSomeoneWaitsForALock(t.db, () => settled);
      await racer.query('COMMIT');
      await expect(batch).rejects.toMatchObject({ sessionId, environmentId: otherEnv });
      await expect(batch).rejects.toThrow(UnknownSessionError);
    } finally {
      racer.release();
    }
    expect(await countWork(t.db)).toBe(1);
  });

  it('looks live items up slot by slot under a generic plan, never through every live item', async () => {
    const { environmentId } = await setupSession(t.db, 'cloud');
    const sessions = Array.from({ length: 500 }, (_, i) => `sesn_plan${i}`);
    await t.db.execute(
      sql`INSERT INTO sessions (id, environment_id)
          SELECT jsonb_array_elements_text(${JSON.stringify(sessions)}::jsonb), ${environmentId}`,
    );
    await enqueueMany(
      t.db,
      sessions.map((sessionId) => ({ environmentId, sessionId, kind: 'model_turn' as const })),
    );
    await t.db.execute(sql`ANALYZE work_items`);
    const statement = await capture((db) =>
      enqueueMany(db, [{ environmentId, sessionId: sessions[0]!, kind: 'model_turn' }]),
    );
    const plan = await genericPlan(t.pool!, statement);
    expect(plan).toMatch(/Index Scan using work_items_live_slot_key on work_items l/);
    expect(plan).not.toMatch(/(Seq|Bitmap Heap) Scan on work_items/);
  });

  it('checks the binding of new items once, by their foreign key: one probe of sessions per item, no more', async () => {
    const { environmentId } = await setupSession(t.db, 'cloud');
    const sessions = Array.from({ length: 500 }, (_, i) => `sesn_bind${i}`);
    await t.db.execute(
      sql`INSERT INTO sessions (id, environment_id)
          SELECT jsonb_array_elements_text(${JSON.stringify(sessions)}::jsonb), ${environmentId}`,
    );
    await t.db.execute(sql`ANALYZE sessions`);
    // This transaction's own scans of the table and its indexes (the foreign key's probes included).
    const scans = async (tx: SqlHandle) => {
      const [row] = await rows<{ n: number }>(
        tx,
        sql`SELECT (coalesce(seq_scan, 0) + coalesce(idx_scan, 0))::int AS n
              FROM pg_stat_xact_user_tables WHERE relname = 'sessions'`,
      );
      return row!.n;
    };
    const probes = await t.db.transaction(async (tx) => {
      const before = await scans(tx);
      const results = await enqueueMany(
        tx,
        sessions.map((sessionId) => ({ environmentId, sessionId, kind: 'model_turn' as const })),
      );
      expect(results.every((r) => r.created)).toBe(true);
      return (await scans(tx)) - before;
    });
    expect(probes).toBe(sessions.length);
  });

  it('wakes pollers at commit, once per environment, only for newly created poll-lane items', async () => {
    const { client: listener, received } = await listenToWork(t.url!);
    try {
      const a = await setupSession(t.db, 'self_hosted');
      const a2 = await createSession(t.db, a.environmentId);
      const b = await setupSession(t.db, 'self_hosted');
      const quiet = await setupSession(t.db, 'self_hosted');
      const cloud = await setupSession(t.db, 'cloud');
      await enqueue(t.db, { ...quiet, kind: 'tool_exec' });
      await listener.query('SELECT 1'); // delivers that enqueue's notification before we reset
      received.length = 0;
      let notifiedInside = -1;
      await t.db.transaction(async (tx) => {
        await enqueueMany(tx, [
          { ...a, kind: 'tool_exec' },
          { ...a, kind: 'model_turn' },
          { environmentId: a.environmentId, sessionId: a2, kind: 'tool_exec' },
          { ...quiet, kind: 'tool_exec' }, // already live: nothing new to wake anyone for
          { ...cloud, kind: 'tool_exec' },
          { ...b, kind: 'tool_exec' },
        ]);
        await listener.query('SELECT 1'); // a round trip on the listener: nothing may arrive yet
        notifiedInside = received.length;
      });
      await until(() => received.length >= 2);
      await listener.query('SELECT 1'); // room for a stray third one to show up
      expect(notifiedInside).toBe(0);
      expect(new Set(received.map((p) => JSON.parse(p).environment_id))).toEqual(
        new Set([a.environmentId, b.environmentId]),
      );
      expect(received).toHaveLength(2);
    } finally {
      await listener.end();
    }
  });
});
