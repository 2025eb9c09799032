import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { RenderedSql } from '../../src/db/fixed-sql.js';
import { maybeRow, type SqlHandle } from '../../src/db/handle.js';
import { renderSql } from '../../src/db/render.js';
import {
  ack,
  cancelSession,
  enqueue,
  getWork,
  type HeartbeatCurrentState,
  HeartbeatMismatchError,
  type HeartbeatResult,
  heartbeat,
  NO_HEARTBEAT,
  poll,
  stop,
  type Timestamp,
  WorkNotFoundError,
} from '../../src/queue/index.js';
import { useTestDb } from '../helpers/db.js';
import {
  compareTimestamps,
  lapseLease,
  leaseWindowMs,
  readWork,
  setupSession,
  wireWork,
} from '../helpers/factories.js';
import { sentQueries } from '../helpers/plans.js';

const STAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{0,5}[1-9])?Z$/;

/** Awaits a heartbeat expected to fail its precondition and returns what the row looked like. */
async function mismatch(promise: Promise<HeartbeatResult>): Promise<HeartbeatCurrentState | null> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(HeartbeatMismatchError);
  return (err as HeartbeatMismatchError).current;
}

/** The same instant written in another UTC offset (`+05:30`, `-23:59`…), with microseconds. */
async function inOffset(db: SqlHandle, value: Timestamp, offset: string): Promise<string> {
  const minutes =
    (offset[0] === '-' ? -1 : 1) * (Number(offset.slice(1, 3)) * 60 + Number(offset.slice(4, 6)));
  const row = await maybeRow<{ v: string }>(
    db,
    sql`SELECT to_char((${value}::timestamptz AT TIME ZONE 'UTC') + ${minutes} * interval '1 minute',
                       'YYYY-MM-DD"T"HH24:MI:SS.US') || ${offset} AS v`,
  );
  return row!.v;
}

/** The same instant with `n` more zeros in its fraction. */
function padFraction(value: Timestamp, n: number): string {
  const body = value.slice(0, -1);
  return `${body}${body.includes('.') ? '' : '.'}${'0'.repeat(n)}Z`;
}

describe.each(['pg', 'pglite'] as const)('heartbeat (%s)', (driver) => {
  const t = useTestDb(driver);

  it('NO_HEARTBEAT before ack fails the precondition, whether or not the item was polled', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'queued');
    expect(await mismatch(heartbeat(t.db, target.environmentId, id, NO_HEARTBEAT, 30))).toEqual({
      lastHeartbeat: null,
      state: 'queued',
    });
    await poll(t.db, target.environmentId, 60_000);
    expect(await mismatch(heartbeat(t.db, target.environmentId, id, NO_HEARTBEAT, 30))).toEqual({
      lastHeartbeat: null,
      state: 'queued',
    });
    expect((await readWork(t.db, id))!.state).toBe('queued');
  });

  it('NO_HEARTBEAT after ack claims the lease: active, extended for the ttl, started_at = last_heartbeat', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'starting');
    const hb = await heartbeat(t.db, target.environmentId, id, NO_HEARTBEAT, 30);
    expect(hb).toEqual({
      lastHeartbeat: expect.stringMatching(STAMP),
      state: 'active',
      leaseExtended: true,
      ttlSeconds: 30,
    });
    const work = await getWork(t.db, target.environmentId, id);
    expect(work).toMatchObject({
      state: 'active',
      lastHeartbeat: hb.lastHeartbeat,
      startedAt: hb.lastHeartbeat,
    });
    expect(await leaseWindowMs(t.db, id)).toBeCloseTo(30_000, 6);
  });

  it('counts the heartbeats it accepts from the holder, not refused echoes, and a re-hand-out starts again at 0', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'starting');
    const count = async (workId: string) =>
      (await maybeRow<{ n: number }>(t.db, sql`SELECT heartbeats AS n FROM work_items WHERE id = ${workId}`))!
        .n;
    expect(await count(id)).toBe(0);
    let last = (await heartbeat(t.db, target.environmentId, id, NO_HEARTBEAT, 30)).lastHeartbeat;
    const first = last;
    for (let i = 0; i < 3; i++)
      last = (await heartbeat(t.db, target.environmentId, id, last, 30)).lastHeartbeat;
    expect(await count(id)).toBe(4);
    await mismatch(heartbeat(t.db, target.environmentId, id, first, 30));
    expect(await count(id)).toBe(4);
    await lapseLease(t.db, id);
    const again = (await poll(t.db, target.environmentId, 60_000))!;
    expect(again.id).not.toBe(id);
    expect(await count(again.id)).toBe(0);
  });

  it('NO_HEARTBEAT is exact and case-sensitive: any other spelling is an unparseable echo', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'starting');
    expect(await mismatch(heartbeat(t.db, target.environmentId, id, 'no_heartbeat', 30))).toBeNull();
    expect(await mismatch(heartbeat(t.db, target.environmentId, id, ' NO_HEARTBEAT', 30))).toBeNull();
    expect((await readWork(t.db, id))!.state).toBe('starting');
  });

  it('NO_HEARTBEAT claims a starting item even after its startup lease lapsed', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'starting');
    await lapseLease(t.db, id);
    expect(await heartbeat(t.db, target.environmentId, id, NO_HEARTBEAT, 30)).toMatchObject({
      state: 'active',
      leaseExtended: true,
    });
  });

  it('a second NO_HEARTBEAT fails the precondition and reports the current heartbeat', async () => {
    const target = await setupSession(t.db);
    const { id, lastHeartbeat } = await wireWork(t.db, target, 'active');
    expect(await mismatch(heartbeat(t.db, target.environmentId, id, NO_HEARTBEAT, 30))).toEqual({
      lastHeartbeat,
      state: 'active',
    });
    expect((await readWork(t.db, id))!.lastHeartbeat).toBe(lastHeartbeat);
  });

  it('echoing the returned value verbatim extends the lease and returns a strictly later heartbeat', async () => {
    const target = await setupSession(t.db);
    const { id, lastHeartbeat } = await wireWork(t.db, target, 'active');
    const next = await heartbeat(t.db, target.environmentId, id, lastHeartbeat!, 100);
    expect(next).toEqual({
      lastHeartbeat: expect.stringMatching(STAMP),
      state: 'active',
      leaseExtended: true,
      ttlSeconds: 100,
    });
    expect(await compareTimestamps(t.db, lastHeartbeat!, next.lastHeartbeat)).toBe(-1);
    expect(await leaseWindowMs(t.db, id)).toBeCloseTo(100_000, 6);
    const work = await getWork(t.db, target.environmentId, id);
    expect(work).toMatchObject({ lastHeartbeat: next.lastHeartbeat, startedAt: lastHeartbeat });
    // And the new value is the one to echo next.
    const third = await heartbeat(t.db, target.environmentId, id, next.lastHeartbeat, 30);
    expect(await compareTimestamps(t.db, next.lastHeartbeat, third.lastHeartbeat)).toBe(-1);
  });

  it('replaying a superseded value fails and reports the current heartbeat and state, changing nothing', async () => {
    const target = await setupSession(t.db);
    const { id, lastHeartbeat } = await wireWork(t.db, target, 'active');
    const next = await heartbeat(t.db, target.environmentId, id, lastHeartbeat!, 30);
    const before = await readWork(t.db, id);
    expect(await mismatch(heartbeat(t.db, target.environmentId, id, lastHeartbeat!, 30))).toEqual({
      lastHeartbeat: next.lastHeartbeat,
      state: 'active',
    });
    expect(await readWork(t.db, id)).toEqual(before);
  });

  it('a well-formed but wrong timestamp fails the precondition', async () => {
    const target = await setupSession(t.db);
    const { id, lastHeartbeat } = await wireWork(t.db, target, 'active');
    expect(await mismatch(heartbeat(t.db, target.environmentId, id, '2000-01-01T00:00:00Z', 30))).toEqual({
      lastHeartbeat,
      state: 'active',
    });
  });

  it('an echo on an item that never heartbeat fails the precondition', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'starting');
    const acked = await getWork(t.db, target.environmentId, id);
    // Even the item's own acknowledged_at is not a heartbeat.
    expect(await mismatch(heartbeat(t.db, target.environmentId, id, acked.acknowledgedAt!, 30))).toEqual({
      lastHeartbeat: null,
      state: 'starting',
    });
  });

  it.each([
    'not-a-timestamp',
    '2026-02-30T00:00:00Z',
    '2026-11-30 09:34:12Z',
    '2026-11-30T24:00:00Z',
    '2026-11-30T09:34:60Z',
    '2026-11-30T09:34:12',
    '2026-11-30T09:34:12+0100',
    '2026-11-30T09:34:12.Z',
    '',
  ])(
    'an unparseable expected %j fails the precondition before any lookup, even for a missing id',
    async (expected) => {
      const target = await setupSession(t.db);
      const { id } = await wireWork(t.db, target, 'active');
      expect(await mismatch(heartbeat(t.db, target.environmentId, id, expected, 30))).toBeNull();
      expect(await mismatch(heartbeat(t.db, target.environmentId, 'work_missing', expected, 30))).toBeNull();
    },
  );

  it('a valid timestamp or NO_HEARTBEAT on a missing, foreign or off-lane id is not found', async () => {
    const target = await setupSession(t.db);
    const other = await setupSession(t.db);
    const cloud = await setupSession(t.db, 'cloud');
    const { id, lastHeartbeat } = await wireWork(t.db, target, 'active');
    const { work: turn } = await enqueue(t.db, { ...target, kind: 'model_turn' });
    const { work: cloudTool } = await enqueue(t.db, { ...cloud, kind: 'tool_exec' });
    const cases: [string, string][] = [
      [target.environmentId, 'work_missing'],
      [other.environmentId, id],
      [target.environmentId, turn.id],
      [cloud.environmentId, cloudTool.id],
    ];
    for (const [environmentId, workId] of cases) {
      for (const expected of [NO_HEARTBEAT, lastHeartbeat!, '2000-01-01T00:00:00Z']) {
        await expect(heartbeat(t.db, environmentId, workId, expected, 30)).rejects.toThrow(WorkNotFoundError);
      }
    }
  });

  it('an echo of the same instant in another form matches: +00:00, lower-case, extra zeros, another offset', async () => {
    const target = await setupSession(t.db);
    const { id, lastHeartbeat } = await wireWork(t.db, target, 'active');
    const forms: ((v: Timestamp) => Promise<string> | string)[] = [
      (v) => v.replace('Z', '+00:00'),
      (v) => v.replace('Z', '-00:00'),
      (v) => v.replace('T', 't').replace('Z', 'z'),
      (v) => padFraction(v, 3),
      (v) => inOffset(t.db, v, '+05:30'),
      (v) => inOffset(t.db, v, '-08:00'),
    ];
    let current = lastHeartbeat!;
    for (const form of forms) {
      const echo = await form(current);
      expect(echo).not.toBe(current);
      const hb = await heartbeat(t.db, target.environmentId, id, echo, 30);
      expect(hb).toMatchObject({ state: 'active', leaseExtended: true });
      current = hb.lastHeartbeat;
    }
  });

  it('an echo in any RFC 3339 offset or fraction length is compared as its instant, never a database error', async () => {
    const target = await setupSession(t.db);
    const { id, lastHeartbeat } = await wireWork(t.db, target, 'active');
    // Offsets beyond ±15:59 and fractions of hundreds of digits are still RFC 3339.
    let current = lastHeartbeat!;
    for (const echo of [
      (v: Timestamp) => inOffset(t.db, v, '+23:59'),
      (v: Timestamp) => inOffset(t.db, v, '-16:00'),
      (v: Timestamp) => padFraction(v, 300),
    ]) {
      const hb = await heartbeat(t.db, target.environmentId, id, await echo(current), 30);
      expect(hb).toMatchObject({ state: 'active', leaseExtended: true });
      current = hb.lastHeartbeat;
    }
    for (const wrong of [
      '2000-01-01T00:00:00+23:59',
      '0001-01-01T00:00:00+01:00',
      `2000-01-01T00:00:00.${'1'.repeat(300)}Z`,
    ]) {
      expect(await mismatch(heartbeat(t.db, target.environmentId, id, wrong, 30))).toEqual({
        lastHeartbeat: current,
        state: 'active',
      });
      await expect(heartbeat(t.db, target.environmentId, 'work_missing', wrong, 30)).rejects.toThrow(
        WorkNotFoundError,
      );
    }
  });

  it('after a graceful stop an echo answers stopping, not extended, leaving heartbeat and lease alone', async () => {
    const target = await setupSession(t.db);
    const { id, lastHeartbeat } = await wireWork(t.db, target, 'active');
    await stop(t.db, target.environmentId, id, false);
    const before = await readWork(t.db, id);
    for (let i = 0; i < 2; i++) {
      const hb = await heartbeat(t.db, target.environmentId, id, lastHeartbeat!, 45);
      expect(hb).toEqual({ lastHeartbeat, state: 'stopping', leaseExtended: false, ttlSeconds: 45 });
    }
    const after = await readWork(t.db, id);
    expect(after).toEqual(before);
    expect(after!.lease).not.toBeNull();
  });

  it('after a force stop an echo answers stopped, not extended', async () => {
    const target = await setupSession(t.db);
    const { id, lastHeartbeat } = await wireWork(t.db, target, 'active');
    await stop(t.db, target.environmentId, id, true);
    expect(await heartbeat(t.db, target.environmentId, id, lastHeartbeat!, 30)).toEqual({
      lastHeartbeat,
      state: 'stopped',
      leaseExtended: false,
      ttlSeconds: 30,
    });
    expect((await readWork(t.db, id))!.lease).toBeNull();
  });

  it('after cancelSession an echo answers stopped, not extended', async () => {
    const target = await setupSession(t.db);
    const { id, lastHeartbeat } = await wireWork(t.db, target, 'active');
    await cancelSession(t.db, target.sessionId);
    expect(await heartbeat(t.db, target.environmentId, id, lastHeartbeat!, 30)).toEqual({
      lastHeartbeat,
      state: 'stopped',
      leaseExtended: false,
      ttlSeconds: 30,
    });
  });

  it('NO_HEARTBEAT on a stopping or stopped item fails the precondition', async () => {
    const target = await setupSession(t.db);
    const { id, lastHeartbeat } = await wireWork(t.db, target, 'stopping');
    expect(await mismatch(heartbeat(t.db, target.environmentId, id, NO_HEARTBEAT, 30))).toEqual({
      lastHeartbeat,
      state: 'stopping',
    });
    await stop(t.db, target.environmentId, id, true);
    expect(await mismatch(heartbeat(t.db, target.environmentId, id, NO_HEARTBEAT, 30))).toEqual({
      lastHeartbeat,
      state: 'stopped',
    });
  });

  it('a starting item stopped before its first heartbeat can never be claimed', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'starting');
    await stop(t.db, target.environmentId, id, false);
    expect(await mismatch(heartbeat(t.db, target.environmentId, id, NO_HEARTBEAT, 30))).toEqual({
      lastHeartbeat: null,
      state: 'stopped',
    });
  });

  it('an active item whose lease lapsed but was not re-polled yet still extends, and stays its holder', async () => {
    const target = await setupSession(t.db);
    const { id, lastHeartbeat } = await wireWork(t.db, target, 'active');
    await lapseLease(t.db, id);
    const hb = await heartbeat(t.db, target.environmentId, id, lastHeartbeat!, 30);
    expect(hb).toMatchObject({ state: 'active', leaseExtended: true });
    expect(await leaseWindowMs(t.db, id)).toBeCloseTo(30_000, 6);
    expect(await poll(t.db, target.environmentId, 60_000)).toBeNull();
  });

  it("a heartbeat after the item was reclaimed under a new id is not found, and the new id's ack starts over", async () => {
    const target = await setupSession(t.db);
    const { id, lastHeartbeat } = await wireWork(t.db, target, 'active');
    await lapseLease(t.db, id);
    const taken = await poll(t.db, target.environmentId, 60_000);
    await expect(heartbeat(t.db, target.environmentId, id, lastHeartbeat!, 30)).rejects.toThrow(
      WorkNotFoundError,
    );
    // The old heartbeat value means nothing to the new id either.
    expect(await mismatch(heartbeat(t.db, target.environmentId, taken!.id, lastHeartbeat!, 30))).toEqual({
      lastHeartbeat: null,
      state: 'queued',
    });
    await ack(t.db, target.environmentId, taken!.id);
    expect((await heartbeat(t.db, target.environmentId, taken!.id, NO_HEARTBEAT, 30)).state).toBe('active');
  });
});

describe('heartbeat on real PostgreSQL connections', () => {
  const t = useTestDb('pg', { poolSize: 20 });

  it('concurrent echoes of one value: exactly one extends, the others fail the precondition', async () => {
    const target = await setupSession(t.db);
    const { id, lastHeartbeat } = await wireWork(t.db, target, 'active');
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, () => heartbeat(t.db, target.environmentId, id, lastHeartbeat!, 30)),
    );
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r) => r.status === 'rejected');
    expect(won).toHaveLength(1);
    for (const r of lost) expect(r.reason).toBeInstanceOf(HeartbeatMismatchError);
    expect((await readWork(t.db, id))!.lastHeartbeat).toBe(won[0]!.value.lastHeartbeat);
  });

  it('concurrent NO_HEARTBEAT claims: exactly one succeeds', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'starting');
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, () => heartbeat(t.db, target.environmentId, id, NO_HEARTBEAT, 30)),
    );
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r) => r.status === 'rejected');
    expect(won).toHaveLength(1);
    for (const r of lost) expect(r.reason).toBeInstanceOf(HeartbeatMismatchError);
    expect((await readWork(t.db, id))!.lastHeartbeat).toBe(won[0]!.value.lastHeartbeat);
  });
});

describe('heartbeat statements', () => {
  it('the first heartbeat and an echoed one each send their one fixed statement (rendered once), with the values of each call', async () => {
    const first = async (env: string, ttl: number) =>
      (await sentQueries((db) => heartbeat(db, env, 'work_a', NO_HEARTBEAT, ttl)))[0]!;
    const echoed = async (env: string, at: string) =>
      (await sentQueries((db) => heartbeat(db, env, 'work_a', at, 30)))[0]!;
    const [f1, f2] = [await first('env_a', 30), await first('env_b', 90)];
    expect(f1).toBeInstanceOf(RenderedSql);
    expect(renderSql(f2).sql).toBe(renderSql(f1).sql);
    expect(renderSql(f1).params).toEqual(expect.arrayContaining(['env_a', 'work_a', 30_000]));
    expect(renderSql(f2).params).toEqual(expect.arrayContaining(['env_b', 'work_a', 90_000]));
    const [e1, e2] = [
      await echoed('env_a', '2026-12-01T10:00:00.123456Z'),
      await echoed('env_b', '2026-12-01T12:00:00+02:00'),
    ];
    expect(e1).toBeInstanceOf(RenderedSql);
    expect(renderSql(e2).sql).toBe(renderSql(e1).sql);
    expect(renderSql(e1).sql).not.toBe(renderSql(f1).sql);
    expect(renderSql(e1).params).toEqual(expect.arrayContaining(['env_a', '2026-12-01T10:00:00.123456', 0]));
    expect(renderSql(e2).params).toEqual(expect.arrayContaining(['env_b', '2026-12-01T12:00:00', 120]));
  });

  it('an echo that is no instant sends nothing: the precondition fails before any lookup', async () => {
    expect(await sentQueries((db) => heartbeat(db, 'env_a', 'work_a', 'yesterday', 30))).toEqual([]);
  });
});
