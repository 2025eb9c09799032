import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { SqlHandle } from '../../src/db/handle.js';
import { enqueue, listWork, poll, type Work, type WorkCursor } from '../../src/queue/index.js';
import { useTestDb } from '../helpers/db.js';
import { createSession, lapseLease, setCreatedAt, setupSession, wireWork } from '../helpers/factories.js';

/** Enqueues one tool_exec item per created_at given, each in its own session; returns ids in order. */
async function itemsAt(db: SqlHandle, environmentId: string, createdAts: string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const createdAt of createdAts) {
    const sessionId = await createSession(db, environmentId);
    const { work } = await enqueue(db, { environmentId, sessionId, kind: 'tool_exec' });
    await setCreatedAt(db, work.id, createdAt);
    ids.push(work.id);
  }
  return ids;
}

/** Pages through the environment as the work API does (fetch limit + 1), returning each page's ids. */
async function pages(db: SqlHandle, environmentId: string, limit: number): Promise<string[][]> {
  const out: string[][] = [];
  let after: WorkCursor | null = null;
  for (;;) {
    const fetched: Work[] = await listWork(db, environmentId, { after, fetch: limit + 1 });
    const page = fetched.slice(0, limit);
    out.push(page.map((w) => w.id));
    if (fetched.length <= limit) return out;
    const last = page[page.length - 1]!;
    after = { createdAt: last.createdAt, id: last.id };
    if (out.length > 100) throw new Error('pages: no end in sight');
  }
}

describe.each(['pg', 'pglite'] as const)('listWork (%s)', (driver) => {
  const t = useTestDb(driver);

  it('an empty environment lists nothing', async () => {
    const { environmentId } = await setupSession(t.db);
    expect(await listWork(t.db, environmentId, { fetch: 21 })).toEqual([]);
  });

  it('lists the poll-lane items of the environment in every state, newest first', async () => {
    const { environmentId } = await setupSession(t.db);
    // The never-polled item comes last: wireWork needs each earlier one to be the only one available.
    const states = ['reserved', 'starting', 'active', 'stopping', 'stopped', 'queued'] as const;
    const ids: string[] = [];
    for (const [i, stage] of states.entries()) {
      const sessionId = await createSession(t.db, environmentId);
      const { id } = await wireWork(t.db, { environmentId, sessionId }, stage);
      await setCreatedAt(t.db, id, `2026-01-01T00:00:0${i}Z`);
      ids.push(id);
    }
    const listed = await listWork(t.db, environmentId, { fetch: 21 });
    expect(listed.map((w) => w.id)).toEqual([...ids].reverse());
    expect(listed.map((w) => w.state)).toEqual([
      'queued',
      'stopped',
      'stopping',
      'active',
      'starting',
      'queued',
    ]);
  });

  it("excludes other environments' items and every kind but tool_exec", async () => {
    const a = await setupSession(t.db);
    const b = await setupSession(t.db);
    const [first, second] = await itemsAt(t.db, a.environmentId, [
      '2026-01-01T00:00:01Z',
      '2026-01-01T00:00:02Z',
    ]);
    for (const kind of ['model_turn', 'web_exec', 'mcp_exec', 'outputs_harvest'] as const) {
      await enqueue(t.db, { ...a, kind });
    }
    await enqueue(t.db, { ...b, kind: 'tool_exec' });
    expect((await listWork(t.db, a.environmentId, { fetch: 21 })).map((w) => w.id)).toEqual([second, first]);
  });

  it('a cloud environment lists nothing, even with a queued tool_exec item', async () => {
    const cloud = await setupSession(t.db, 'cloud');
    await enqueue(t.db, { ...cloud, kind: 'tool_exec' });
    await enqueue(t.db, { ...cloud, kind: 'model_turn' });
    expect(await listWork(t.db, cloud.environmentId, { fetch: 21 })).toEqual([]);
  });

  it('fetches at most `fetch` rows, the newest', async () => {
    const { environmentId } = await setupSession(t.db);
    const ids = await itemsAt(t.db, environmentId, [
      '2026-01-01T00:00:01Z',
      '2026-01-01T00:00:02Z',
      '2026-01-01T00:00:03Z',
    ]);
    expect((await listWork(t.db, environmentId, { fetch: 2 })).map((w) => w.id)).toEqual([ids[2], ids[1]]);
  });

  it('keyset pages of limit 2 over three items: two, then the third, no overlap, then the end', async () => {
    const { environmentId } = await setupSession(t.db);
    const ids = await itemsAt(t.db, environmentId, [
      '2026-01-01T00:00:01Z',
      '2026-01-01T00:00:02Z',
      '2026-01-01T00:00:03Z',
    ]);
    expect(await pages(t.db, environmentId, 2)).toEqual([[ids[2], ids[1]], [ids[0]]]);
  });

  it('an exact multiple of the limit ends with no further page', async () => {
    const { environmentId } = await setupSession(t.db);
    const ids = await itemsAt(t.db, environmentId, ['2026-01-01T00:00:01Z', '2026-01-01T00:00:02Z']);
    expect(await pages(t.db, environmentId, 2)).toEqual([[ids[1], ids[0]]]);
  });

  it('items sharing a created_at are ordered by id, newest-first, and paged through without loss or repeat', async () => {
    const { environmentId } = await setupSession(t.db);
    const ids = await itemsAt(t.db, environmentId, Array(5).fill('2026-01-01T00:00:00.123456Z'));
    const paged = (await pages(t.db, environmentId, 2)).flat();
    expect(paged).toEqual([...ids].sort().reverse());
  });

  it('cursors keep microseconds: items one microsecond apart page through one by one', async () => {
    const { environmentId } = await setupSession(t.db);
    const ids = await itemsAt(t.db, environmentId, [
      '2026-01-01T00:00:00.000001Z',
      '2026-01-01T00:00:00.000002Z',
      '2026-01-01T00:00:00.000003Z',
      '2026-01-01T00:00:00.000004Z',
    ]);
    expect(await pages(t.db, environmentId, 1)).toEqual([[ids[3]], [ids[2]], [ids[1]], [ids[0]]]);
  });

  it('continues strictly past the cursor, which need not name an existing item', async () => {
    const { environmentId } = await setupSession(t.db);
    const ids = await itemsAt(t.db, environmentId, [
      '2026-01-01T00:00:01Z',
      '2026-01-01T00:00:02Z',
      '2026-01-01T00:00:03Z',
    ]);
    const after = { createdAt: '2026-01-01T00:00:02.5Z', id: 'work_gone' };
    expect((await listWork(t.db, environmentId, { after, fetch: 21 })).map((w) => w.id)).toEqual([
      ids[1],
      ids[0],
    ]);
    const atTie = { createdAt: '2026-01-01T00:00:02Z', id: ids[1]! };
    expect((await listWork(t.db, environmentId, { after: atTie, fetch: 21 })).map((w) => w.id)).toEqual([
      ids[0],
    ]);
  });

  it('a re-handed-out item keeps its place (created_at) under its new id', async () => {
    const { environmentId } = await setupSession(t.db);
    const [older, newer] = await itemsAt(t.db, environmentId, [
      '2026-01-01T00:00:01Z',
      '2026-01-01T00:00:02Z',
    ]);
    const polled = await poll(t.db, environmentId, 60_000);
    expect(polled!.id).toBe(older);
    await lapseLease(t.db, older!);
    const rotated = await poll(t.db, environmentId, 60_000);
    expect((await listWork(t.db, environmentId, { fetch: 21 })).map((w) => w.id)).toEqual([
      newer,
      rotated!.id,
    ]);
  });
});

describe('listWork’s plan (pg)', () => {
  const t = useTestDb('pg');

  it('reads a page from work_items_list_idx in order, without sorting the environment', async () => {
    const { environmentId } = await setupSession(t.db, 'self_hosted');
    await t.db.execute(
      sql`INSERT INTO sessions (id, environment_id)
          SELECT 'plan_' || g, ${environmentId} FROM generate_series(1, 5000) g`,
    );
    await t.db.execute(
      sql`INSERT INTO work_items (id, environment_id, session_id, kind, lane, state, created_at)
          SELECT 'work_plan_' || g, ${environmentId}, 'plan_' || g, 'tool_exec', 'poll', 'stopped',
                 now() - g * interval '1 ms'
            FROM generate_series(1, 5000) g`,
    );
    await t.db.execute(sql`ANALYZE work_items`);
    // The statement listWork sends, explained instead of run.
    let plan = '';
    const explaining: SqlHandle = {
      execute: async (query) => {
        const result = (await t.db.execute(sql`EXPLAIN (FORMAT JSON) ${query}`)) as { rows: unknown[] };
        plan = JSON.stringify(result.rows);
        return { rows: [] };
      },
    };
    const after = { createdAt: new Date().toISOString(), id: 'work_zzzz' };
    for (const cursor of [null, after]) {
      await listWork(explaining, environmentId, { after: cursor, fetch: 21 });
      expect(plan).toContain('work_items_list_idx');
      expect(plan).not.toContain('"Node Type":"Sort"');
    }
  });
});
