/**
 * The Neon serverless Pool (the Workers driver) through the local wsproxy: the seam carries
 * the queue core unchanged, including transactions, row locks and microsecond proofs.
 */
import { sql } from 'drizzle-orm';
import { DrizzleQueryError } from 'drizzle-orm/errors';
import { describe, expect, it } from 'vitest';
import { pgCode } from '../../src/db/errors.js';
import { maybeRow } from '../../src/db/handle.js';
import {
  ack,
  assertLease,
  claim,
  complete,
  enqueue,
  extend,
  heartbeat,
  LeaseLostError,
  NO_HEARTBEAT,
  poll,
} from '../../src/queue/index.js';
import { useTestDb } from '../helpers/db.js';
import { backdateLease, readWork, setupSession } from '../helpers/factories.js';

const MINUTE = 60_000;

describe('queue core on the Neon serverless driver', () => {
  const t = useTestDb('neon');

  it('enqueue, claim, extend and complete with exact proofs', async () => {
    const s = await setupSession(t.db, 'cloud');
    const { work } = await enqueue(t.db, { ...s, kind: 'model_turn' });
    const item = (await claim(t.db, 'model_turn', MINUTE))!;
    expect(item.id).toBe(work.id);
    const stale = { ...item };
    await extend(t.db, item, MINUTE);
    await expect(complete(t.db, stale)).rejects.toThrow(LeaseLostError);
    await complete(t.db, item);
    expect((await readWork(t.db, item.id))!.state).toBe('stopped');
  });

  it('joins the caller transaction and rolls back with it', async () => {
    const s = await setupSession(t.db, 'cloud');
    await expect(
      t.db.transaction(async (tx) => {
        await enqueue(tx, { ...s, kind: 'model_turn' });
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    expect(await claim(t.db, 'model_turn', MINUTE)).toBeNull();
  });

  it('an asserting transaction holds a lapsed item against a concurrent claim', async () => {
    const s = await setupSession(t.db, 'cloud');
    await enqueue(t.db, { ...s, kind: 'web_exec' });
    const item = (await claim(t.db, 'web_exec', MINUTE))!;
    await backdateLease(t.db, item, 2 * MINUTE);
    const during = await t.db.transaction(async (tx) => {
      await assertLease(tx, item);
      return claim(t.db, 'web_exec', MINUTE);
    });
    expect(during).toBeNull();
    expect(await claim(t.db, 'web_exec', MINUTE)).toMatchObject({ id: item.id, reclaimed: true });
  });

  it('poll, ack and heartbeat echoes round-trip to the microsecond', async () => {
    const s = await setupSession(t.db, 'self_hosted');
    await enqueue(t.db, { ...s, kind: 'tool_exec' });
    const work = (await poll(t.db, s.environmentId, MINUTE))!;
    await ack(t.db, s.environmentId, work.id);
    let beat = await heartbeat(t.db, s.environmentId, work.id, NO_HEARTBEAT, 30);
    for (let i = 0; i < 5; i++) {
      beat = await heartbeat(t.db, s.environmentId, work.id, beat.lastHeartbeat, 30);
      expect(beat).toMatchObject({ state: 'active', leaseExtended: true });
    }
  });

  it('a refused statement fails as on the pg driver: a DrizzleQueryError carrying the SQLSTATE', async () => {
    const err = await t.db.execute(sql`SELECT 1 / ${0}::int`).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DrizzleQueryError);
    expect(pgCode(err)).toBe('22012');
  });

  it('hands timestamps, dates and intervals back as the server wrote them, and parses the rest', async () => {
    const row = await maybeRow<Record<string, unknown>>(
      t.db,
      sql`SELECT '2026-12-03 10:00:00.123456+00'::timestamptz AS at, '2026-12-03'::date AS day,
                 '90 seconds'::interval AS span, 7::int AS n, '{"a":1}'::jsonb AS doc, true AS yes`,
    );
    expect(row).toEqual({
      at: '2026-12-03 10:00:00.123456+00',
      day: '2026-12-03',
      span: '00:01:30',
      n: 7,
      doc: { a: 1 },
      yes: true,
    });
  });

  it('commits what a transaction wrote, on one connection from begin to commit', async () => {
    const s = await setupSession(t.db, 'cloud');
    const pids = await t.db.transaction(async (tx) => {
      const first = await maybeRow<{ pid: number }>(tx, sql`SELECT pg_backend_pid() AS pid`);
      await enqueue(tx, { ...s, kind: 'mcp_exec' });
      const second = await maybeRow<{ pid: number }>(tx, sql`SELECT pg_backend_pid() AS pid`);
      return [first!.pid, second!.pid];
    });
    expect(pids[0]).toBe(pids[1]);
    expect(await claim(t.db, 'mcp_exec', MINUTE)).not.toBeNull();
  });
});
