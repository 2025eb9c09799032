import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { RenderedSql } from '../../src/db/fixed-sql.js';
import { rows } from '../../src/db/handle.js';
import { renderSql } from '../../src/db/render.js';
import { claim, claimMany, complete, enqueue, LeaseLostError, poll } from '../../src/queue/index.js';
import { useTestDb } from '../helpers/db.js';
import {
  backdateLease,
  createSession,
  readWork,
  seedClaimBacklog,
  seedClaimItems,
  setupSession,
} from '../helpers/factories.js';
import { sentQueries, workRowsFetched } from '../helpers/plans.js';

const MINUTE = 60_000;

describe.each(['pg', 'pglite'] as const)('claim (%s)', (driver) => {
  const t = useTestDb(driver);

  /** `n` queued mcp_exec items on the claim lane, oldest first. */
  const claimableIds = (n: number) => seedClaimItems(t.db, n, 'mcp_exec');

  /** Puts a claim-lane item in a state: queued, held under a live lease, or held under a lapsed one. */
  const putInState = (id: string, as: 'queued' | 'held' | 'lapsed') =>
    t.db.execute(
      as === 'queued'
        ? sql`UPDATE work_items SET state = 'queued', lease_expires_at = NULL WHERE id = ${id}`
        : sql`UPDATE work_items SET state = 'active', claims = 1,
                     lease_expires_at = now() + ${as === 'held' ? MINUTE : -MINUTE} * interval '1 millisecond'
               WHERE id = ${id}`,
    );

  it('leases the item for ttl and reports it not reclaimed; an empty lane answers null', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    const { work } = await enqueue(t.db, { environmentId, sessionId, kind: 'model_turn' });
    const item = await claim(t.db, 'model_turn', MINUTE);
    expect(item).toMatchObject({
      id: work.id,
      environmentId,
      sessionId,
      kind: 'model_turn',
      reclaimed: false,
    });
    expect(item!.claims).toBe(1);
    const row = await readWork(t.db, work.id);
    expect(row).toMatchObject({ state: 'active', lease: item!.lease });
    await complete(t.db, item!);
    expect(await claim(t.db, 'model_turn', MINUTE)).toBeNull();
  });

  it('hands out items oldest first and only of the asked kind', async () => {
    const { environmentId } = await setupSession(t.db, 'cloud');
    const s1 = await createSession(t.db, environmentId);
    const s2 = await createSession(t.db, environmentId);
    const first = await enqueue(t.db, { environmentId, sessionId: s1, kind: 'model_turn' });
    const second = await enqueue(t.db, { environmentId, sessionId: s2, kind: 'model_turn' });
    await enqueue(t.db, { environmentId, sessionId: s1, kind: 'tool_exec' });
    expect((await claim(t.db, 'model_turn', MINUTE))!.id).toBe(first.work.id);
    expect((await claim(t.db, 'model_turn', MINUTE))!.id).toBe(second.work.id);
    expect(await claim(t.db, 'model_turn', MINUTE)).toBeNull();
  });

  it('never takes an item whose lease is live', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    await enqueue(t.db, { environmentId, sessionId, kind: 'web_exec' });
    expect(await claim(t.db, 'web_exec', MINUTE)).not.toBeNull();
    expect(await claim(t.db, 'web_exec', MINUTE)).toBeNull();
  });

  it('reclaims a lapsed lease under the same id, flagged reclaimed, and fences the old holder', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    await enqueue(t.db, { environmentId, sessionId, kind: 'model_turn' });
    const first = (await claim(t.db, 'model_turn', MINUTE))!;
    await backdateLease(t.db, first, 2 * MINUTE);
    const second = (await claim(t.db, 'model_turn', MINUTE))!;
    expect(second).toMatchObject({ id: first.id, reclaimed: true, claims: 2 });
    expect(second.lease).not.toBe(first.lease);
    await expect(complete(t.db, first)).rejects.toThrow(LeaseLostError);
    await complete(t.db, second);
    expect((await readWork(t.db, first.id))!.state).toBe('stopped');
  });

  it('hands out the older of a lapsed lease and a queued item, whichever kind of availability it is', async () => {
    const ids = await claimableIds(4);
    // Oldest first: queued, lapsed, held (live lease), queued.
    await putInState(ids[0]!, 'queued');
    await putInState(ids[1]!, 'lapsed');
    await putInState(ids[2]!, 'held');
    await putInState(ids[3]!, 'queued');
    const order = [];
    for (
      let item = await claim(t.db, 'mcp_exec', MINUTE);
      item;
      item = await claim(t.db, 'mcp_exec', MINUTE)
    ) {
      order.push({ id: item.id, reclaimed: item.reclaimed });
    }
    expect(order).toEqual([
      { id: ids[0], reclaimed: false },
      { id: ids[1], reclaimed: true },
      { id: ids[3], reclaimed: false },
    ]);
  });

  it('steps past no item in flight: with 1,000 held items older than the queue, a claim reads a handful of rows', async () => {
    const ids = await claimableIds(1_005);
    expect(await claimMany(t.db, 'mcp_exec', 1_000, MINUTE)).toHaveLength(1_000);
    const { fetched, result } = await workRowsFetched(t.db, (tx) => claim(tx, 'mcp_exec', MINUTE));
    expect(result!.id).toBe(ids[1_000]);
    expect(fetched).toBeLessThanOrEqual(5);
  });

  it('takes a self_hosted tool_exec only by poll and a cloud tool_exec only by claim', async () => {
    const selfHosted = await setupSession(t.db, 'self_hosted');
    const cloud = await setupSession(t.db, 'cloud');
    const polled = await enqueue(t.db, { ...selfHosted, kind: 'tool_exec' });
    expect(await claim(t.db, 'tool_exec', MINUTE)).toBeNull();
    expect((await poll(t.db, selfHosted.environmentId, MINUTE))!.id).toBe(polled.work.id);
    const claimed = await enqueue(t.db, { ...cloud, kind: 'tool_exec' });
    expect(await poll(t.db, cloud.environmentId, MINUTE)).toBeNull();
    expect((await claim(t.db, 'tool_exec', MINUTE))!.id).toBe(claimed.work.id);
  });

  it('claims model_turn, web_exec, mcp_exec and outputs_harvest for both environment kinds, never polls them', async () => {
    for (const envKind of ['cloud', 'self_hosted'] as const) {
      const s = await setupSession(t.db, envKind);
      for (const kind of ['model_turn', 'web_exec', 'mcp_exec', 'outputs_harvest'] as const) {
        const traceContext =
          kind === 'model_turn' ? undefined : { traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01` };
        const { work } = await enqueue(t.db, { ...s, kind, traceContext });
        expect(await poll(t.db, s.environmentId, MINUTE)).toBeNull();
        const item = (await claim(t.db, kind, MINUTE))!;
        expect(item.id).toBe(work.id);
        expect(item.traceContext).toEqual(traceContext ?? null);
      }
    }
  });

  it('carries the metadata and trace context captured at enqueue', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    const traceContext = { traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`, tracestate: 'k=v' };
    await enqueue(t.db, {
      environmentId,
      sessionId,
      kind: 'tool_exec',
      metadata: { step: '3' },
      traceContext,
    });
    const item = (await claim(t.db, 'tool_exec', MINUTE))!;
    expect(item.metadata).toEqual({ step: '3' });
    expect(item.traceContext).toEqual(traceContext);
  });

  it('the lease proof keeps the microseconds the database stamped', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'cloud');
    await enqueue(t.db, { environmentId, sessionId, kind: 'model_turn' });
    const item = (await claim(t.db, 'model_turn', MINUTE))!;
    const [stored] = await rows<{ exact: boolean; micros: string }>(
      t.db,
      sql`SELECT lease_expires_at = ${item.lease}::timestamptz AS exact,
                 to_char(lease_expires_at, 'US') AS micros FROM work_items WHERE id = ${item.id}`,
    );
    expect(stored!.exact).toBe(true);
    expect(item.lease).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/);
  });
});

describe('claim under contention on real PostgreSQL connections', () => {
  const t = useTestDb('pg', { poolSize: 24 });

  it('parallel claims never share an item', async () => {
    const { environmentId } = await setupSession(t.db, 'cloud');
    for (let i = 0; i < 8; i++) {
      await enqueue(t.db, {
        environmentId,
        sessionId: await createSession(t.db, environmentId),
        kind: 'model_turn',
      });
    }
    const items = await Promise.all(Array.from({ length: 8 }, () => claim(t.db, 'model_turn', MINUTE)));
    expect(items.every((i) => i !== null)).toBe(true);
    expect(new Set(items.map((i) => i!.id)).size).toBe(8);
  });

  it('16 claimers complete 5,000 items exactly once: none lost, none twice', async () => {
    const total = 5_000;
    await seedClaimBacklog(t.db, total, 'web_exec');
    const claimed = new Map<string, number>();
    const completed = new Map<string, number>();
    const bump = (m: Map<string, number>, id: string) => m.set(id, (m.get(id) ?? 0) + 1);
    let lost = 0;
    const claimer = async () => {
      for (;;) {
        const item = await claim(t.db, 'web_exec', MINUTE);
        if (!item) return;
        bump(claimed, item.id);
        try {
          await complete(t.db, item);
          bump(completed, item.id);
        } catch (err) {
          if (err instanceof LeaseLostError) lost++;
          else throw err;
        }
      }
    };
    const started = performance.now();
    await Promise.all(Array.from({ length: 16 }, () => claimer()));
    const seconds = (performance.now() - started) / 1000;
    console.warn(
      `claim+complete, 16 claimers: ${total} items in ${seconds.toFixed(2)} s (${Math.round(total / seconds)}/s)`,
    );
    expect(lost).toBe(0);
    expect(claimed.size).toBe(total);
    expect([...claimed.values()].every((n) => n === 1)).toBe(true);
    expect(completed.size).toBe(total);
    expect([...completed.values()].every((n) => n === 1)).toBe(true);
    const [left] = await rows<{ n: number }>(
      t.db,
      sql`SELECT count(*)::int AS n FROM work_items WHERE state <> 'stopped'`,
    );
    expect(left!.n).toBe(0);
  });
});

describe('claim statement', () => {
  it('sends one fixed statement (its text rendered once) with the kind and lease length of each call', async () => {
    const [a] = await sentQueries((db) => claim(db, 'tool_exec', 30_000));
    const [b] = await sentQueries((db) => claim(db, 'model_turn', 5_000));
    expect(a).toBeInstanceOf(RenderedSql);
    expect(renderSql(b!).sql).toBe(renderSql(a!).sql);
    expect(renderSql(a!).params).toEqual(expect.arrayContaining(['tool_exec', 30_000]));
    expect(renderSql(b!).params).toEqual(expect.arrayContaining(['model_turn', 5_000]));
  });
});
