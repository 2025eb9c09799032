import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { SqlHandle } from '../../src/db/handle.js';
import { type BrowsedWork, browseWork } from '../../src/queue/browse-work.js';
import { enqueue, poll, type WorkCursor, type WorkKind, type WorkState } from '../../src/queue/index.js';
import { useTestDb } from '../helpers/db.js';
import { createSession, insertWork, setCreatedAt, setupSession } from '../helpers/factories.js';

type Filter = { state?: WorkState; kind?: WorkKind };

/** Pages through the environment as the console does (fetch limit + 1), returning each page's items. */
async function pages(
  db: SqlHandle,
  environmentId: string,
  limit: number,
  filter: Filter = {},
): Promise<BrowsedWork[][]> {
  const out: BrowsedWork[][] = [];
  let after: WorkCursor | null = null;
  for (;;) {
    const fetched = await browseWork(db, environmentId, { ...filter, after, fetch: limit + 1 });
    const page = fetched.slice(0, limit);
    out.push(page);
    if (fetched.length <= limit) return out;
    const last = page[page.length - 1]!;
    after = { createdAt: last.createdAt, id: last.id };
    if (out.length > 100) throw new Error('pages: no end in sight');
  }
}

const ids = (items: BrowsedWork[]) => items.map((w) => w.id);

/** Orders (createdAt, id) pairs newest first, as the queue pages them. */
function newestFirst(items: { createdAt: string; id: string }[]): string[] {
  return [...items]
    .sort((a, b) =>
      a.createdAt === b.createdAt
        ? a.id < b.id
          ? 1
          : -1
        : Date.parse(b.createdAt) - Date.parse(a.createdAt),
    )
    .map((i) => i.id);
}

/**
 * A spread of items in one environment, one session each, with fixed created_ats (second i):
 * a queued tool_exec (poll), a stopped tool_exec (poll), a queued model_turn (claim), a
 * stopped model_turn (claim), an active web_exec (claim). Returns ids by label.
 */
async function spread(db: SqlHandle, environmentId: string) {
  const specs = [
    ['queuedTool', 'tool_exec', 'queued'],
    ['stoppedTool', 'tool_exec', 'stopped'],
    ['queuedTurn', 'model_turn', 'queued'],
    ['stoppedTurn', 'model_turn', 'stopped'],
    ['activeWeb', 'web_exec', 'active'],
  ] as const;
  const out: Record<string, string> = {};
  for (const [i, [label, kind, state]] of specs.entries()) {
    const sessionId = await createSession(db, environmentId);
    const [id] = await insertWork(db, { environmentId, sessionId }, { kind, state });
    await setCreatedAt(db, id!, `2026-01-01T00:00:0${i}Z`);
    out[label] = id!;
  }
  return out as Record<(typeof specs)[number][0], string>;
}

describe.each(['pg', 'pglite'] as const)('browseWork (%s)', (driver) => {
  const t = useTestDb(driver);

  it('an empty environment browses to nothing', async () => {
    const { environmentId } = await setupSession(t.db);
    expect(await browseWork(t.db, environmentId, { fetch: 21 })).toEqual([]);
  });

  it('returns both lanes, newest first, each marked with its lane', async () => {
    const target = await setupSession(t.db, 'self_hosted');
    const { work: tool } = await enqueue(t.db, { ...target, kind: 'tool_exec' });
    const { work: turn } = await enqueue(t.db, { ...target, kind: 'model_turn' });
    await setCreatedAt(t.db, tool.id, '2026-01-01T00:00:01Z');
    await setCreatedAt(t.db, turn.id, '2026-01-01T00:00:02Z');
    const browsed = await browseWork(t.db, target.environmentId, { fetch: 21 });
    expect(browsed.map((w) => [w.id, w.lane, w.kind])).toEqual([
      [turn.id, 'claim', 'model_turn'],
      [tool.id, 'poll', 'tool_exec'],
    ]);

    await setCreatedAt(t.db, tool.id, '2026-01-01T00:00:03Z');
    expect(ids(await browseWork(t.db, target.environmentId, { fetch: 21 }))).toEqual([tool.id, turn.id]);
  });

  it('carries the Work fields plus updatedAt as timestamps', async () => {
    const target = await setupSession(t.db);
    const { work } = await enqueue(t.db, { ...target, kind: 'tool_exec', metadata: { a: 'b' } });
    const [browsed] = await browseWork(t.db, target.environmentId, { fetch: 21 });
    expect(browsed).toMatchObject({
      id: work.id,
      environmentId: target.environmentId,
      sessionId: target.sessionId,
      kind: 'tool_exec',
      state: 'queued',
      metadata: { a: 'b' },
      createdAt: work.createdAt,
      lane: 'poll',
      leaseLive: null,
      leaseExpiresAt: null,
    });
    expect(browsed!.updatedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$/);
  });

  it('the state filter keeps only items in that state, on both lanes', async () => {
    const { environmentId } = await setupSession(t.db);
    const s = await spread(t.db, environmentId);
    expect(ids(await browseWork(t.db, environmentId, { state: 'queued', fetch: 21 }))).toEqual([
      s.queuedTurn,
      s.queuedTool,
    ]);
    expect(ids(await browseWork(t.db, environmentId, { state: 'stopped', fetch: 21 }))).toEqual([
      s.stoppedTurn,
      s.stoppedTool,
    ]);
    expect(ids(await browseWork(t.db, environmentId, { state: 'active', fetch: 21 }))).toEqual([s.activeWeb]);
    expect(await browseWork(t.db, environmentId, { state: 'stopping', fetch: 21 })).toEqual([]);
  });

  it('the kind filter keeps only items of that kind, in every state', async () => {
    const { environmentId } = await setupSession(t.db);
    const s = await spread(t.db, environmentId);
    expect(ids(await browseWork(t.db, environmentId, { kind: 'tool_exec', fetch: 21 }))).toEqual([
      s.stoppedTool,
      s.queuedTool,
    ]);
    expect(ids(await browseWork(t.db, environmentId, { kind: 'model_turn', fetch: 21 }))).toEqual([
      s.stoppedTurn,
      s.queuedTurn,
    ]);
    expect(await browseWork(t.db, environmentId, { kind: 'mcp_exec', fetch: 21 })).toEqual([]);
  });

  it('state and kind filters combine as AND', async () => {
    const { environmentId } = await setupSession(t.db);
    const s = await spread(t.db, environmentId);
    const browse = (state: WorkState, kind: WorkKind) =>
      browseWork(t.db, environmentId, { state, kind, fetch: 21 }).then(ids);
    expect(await browse('queued', 'tool_exec')).toEqual([s.queuedTool]);
    expect(await browse('stopped', 'model_turn')).toEqual([s.stoppedTurn]);
    expect(await browse('active', 'web_exec')).toEqual([s.activeWeb]);
    expect(await browse('active', 'tool_exec')).toEqual([]);
  });

  it('fetches at most `fetch` rows, the newest', async () => {
    const { environmentId } = await setupSession(t.db);
    const s = await spread(t.db, environmentId);
    expect(ids(await browseWork(t.db, environmentId, { fetch: 2 }))).toEqual([s.activeWeb, s.stoppedTurn]);
  });

  it('paging with `after` covers 23 items of both lanes exactly once, in order, ties broken by id', async () => {
    const { environmentId, sessionId } = await setupSession(t.db);
    const tools = await insertWork(t.db, { environmentId, sessionId }, { state: 'stopped', count: 12 });
    const turns = await insertWork(
      t.db,
      { environmentId, sessionId },
      { kind: 'model_turn', state: 'stopped', count: 11 },
    );
    // Groups of four share a created_at exactly (the last group has three), lanes interleaved.
    const all = tools.flatMap((id, i) => (turns[i] ? [id, turns[i]] : [id]));
    expect(all).toHaveLength(23);
    const placed = all.map((id, i) => ({ id, createdAt: `2026-01-01T00:00:0${Math.floor(i / 4)}.5Z` }));
    for (const { id, createdAt } of placed) await setCreatedAt(t.db, id, createdAt);

    const paged = await pages(t.db, environmentId, 10);
    expect(paged.map((p) => p.length)).toEqual([10, 10, 3]);
    const flat = paged.flat().map((w) => w.id);
    expect(new Set(flat).size).toBe(23);
    expect([...flat].sort()).toEqual([...all].sort());
    expect(flat).toEqual(newestFirst(placed));
    expect(new Set(paged.flat().map((w) => w.lane))).toEqual(new Set(['poll', 'claim']));
  });

  it('paging stays exact when a cursor lands inside a run of equal created_at', async () => {
    const { environmentId, sessionId } = await setupSession(t.db);
    const all = await insertWork(t.db, { environmentId, sessionId }, { state: 'stopped', count: 7 });
    for (const id of all) await setCreatedAt(t.db, id, '2026-01-01T00:00:00.123456Z');
    const paged = await pages(t.db, environmentId, 3);
    expect(paged.map((p) => p.length)).toEqual([3, 3, 1]);
    expect(paged.flat().map((w) => w.id)).toEqual([...all].sort().reverse());
  });

  it('paging composes with a filter: every matching item once, no other', async () => {
    const { environmentId, sessionId } = await setupSession(t.db);
    const stopped = await insertWork(t.db, { environmentId, sessionId }, { state: 'stopped', count: 9 });
    await insertWork(t.db, { environmentId, sessionId }, { state: 'stopping', count: 6 });
    for (const [i, id] of stopped.entries()) await setCreatedAt(t.db, id, `2026-01-01T00:00:0${i % 3}Z`);
    const flat = (await pages(t.db, environmentId, 4, { state: 'stopped' })).flat();
    expect(flat.every((w) => w.state === 'stopped')).toBe(true);
    expect(flat.map((w) => w.id).sort()).toEqual([...stopped].sort());
    expect(new Set(flat.map((w) => w.id)).size).toBe(9);
  });

  it('continues strictly past the cursor, which need not name an existing item', async () => {
    const { environmentId } = await setupSession(t.db);
    const s = await spread(t.db, environmentId);
    const after = { createdAt: '2026-01-01T00:00:02.5Z', id: 'work_gone' };
    expect(ids(await browseWork(t.db, environmentId, { after, fetch: 21 }))).toEqual([
      s.queuedTurn,
      s.stoppedTool,
      s.queuedTool,
    ]);
    const atTie = { createdAt: '2026-01-01T00:00:02Z', id: s.queuedTurn };
    expect(ids(await browseWork(t.db, environmentId, { after: atTie, fetch: 21 }))).toEqual([
      s.stoppedTool,
      s.queuedTool,
    ]);
  });

  it("other environments' items never appear, with or without filters or cursor", async () => {
    const a = await setupSession(t.db);
    const b = await setupSession(t.db);
    const cloud = await setupSession(t.db, 'cloud');
    const mine = await insertWork(t.db, a, { state: 'stopped', count: 5 });
    await insertWork(t.db, b, { state: 'stopped', count: 5 });
    await insertWork(t.db, b, { kind: 'model_turn', state: 'stopped', count: 5 });
    await insertWork(t.db, cloud, { state: 'stopped', count: 5 });
    // Interleave every environment's created_at so only the environment predicate separates them.
    await t.db.execute(
      sql`UPDATE work_items SET created_at = '2026-01-01'::timestamptz + (ascii(right(id, 1)) % 4) * interval '1 second'`,
    );
    const flat = (await pages(t.db, a.environmentId, 2)).flat();
    expect(flat.map((w) => w.id).sort()).toEqual([...mine].sort());
    expect(flat.every((w) => w.environmentId === a.environmentId)).toBe(true);
    expect(
      await browseWork(t.db, a.environmentId, { kind: 'model_turn', state: 'stopped', fetch: 21 }),
    ).toEqual([]);
  });

  it('leaseLive is true for a live lease, false for a lapsed one, null without one', async () => {
    const { environmentId } = await setupSession(t.db);
    const lease = async (kind: WorkKind, leaseInMs: number | null, at: string) => {
      const sessionId = await createSession(t.db, environmentId);
      const [id] = await insertWork(t.db, { environmentId, sessionId }, { kind, state: 'active', leaseInMs });
      await setCreatedAt(t.db, id!, at);
      return id!;
    };
    const live = await lease('model_turn', 60_000, '2026-01-01T00:00:03Z');
    const lapsed = await lease('model_turn', -1_000, '2026-01-01T00:00:02Z');
    const none = await lease('web_exec', null, '2026-01-01T00:00:01Z');
    const browsed = await browseWork(t.db, environmentId, { fetch: 21 });
    expect(browsed.map((w) => [w.id, w.leaseLive])).toEqual([
      [live, true],
      [lapsed, false],
      [none, null],
    ]);
    expect(browsed[0]!.leaseExpiresAt).not.toBeNull();
    expect(browsed[1]!.leaseExpiresAt).not.toBeNull();
    expect(browsed[2]!.leaseExpiresAt).toBeNull();

    // Lapsing the live lease by backdating it flips the flag.
    await t.db.execute(
      sql`UPDATE work_items SET lease_expires_at = now() - interval '1 millisecond' WHERE id = ${live}`,
    );
    expect((await browseWork(t.db, environmentId, { fetch: 1 }))[0]!.leaseLive).toBe(false);
  });

  it('a poll reservation is a live lease on a queued poll-lane item', async () => {
    const target = await setupSession(t.db);
    const { work } = await enqueue(t.db, { ...target, kind: 'tool_exec' });
    expect((await browseWork(t.db, target.environmentId, { fetch: 21 }))[0]!.leaseLive).toBeNull();
    await poll(t.db, target.environmentId, 60_000);
    const [browsed] = await browseWork(t.db, target.environmentId, { fetch: 21 });
    expect(browsed).toMatchObject({ id: work.id, state: 'queued', lane: 'poll', leaseLive: true });
  });
});
