import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { pgCode } from '../../src/db/errors.js';
import { maybeRow, type SqlHandle } from '../../src/db/handle.js';
import { deleteEnvironment } from '../../src/environments/index.js';
import {
  ack,
  cancelSession,
  enqueue,
  enqueueHealthcheck,
  environmentHealthchecks,
  heartbeat,
  listWork,
  NO_HEARTBEAT,
  poll,
  sampleQueues,
  stats,
  stop,
} from '../../src/queue/index.js';
import { useTestDb } from '../helpers/db.js';
import { countWork, createEnvironment, lapseLease, setupSession } from '../helpers/factories.js';
import { listenToWork } from '../helpers/listen.js';

/** A healthcheck's row as stored: the columns that say what it is for. */
async function stored(db: SqlHandle, workId: string) {
  return maybeRow<{
    data_type: string;
    session_id: string | null;
    healthcheck_id: string | null;
    healthcheck_environment_id: string | null;
    kind: string;
    lane: string;
  }>(
    db,
    sql`SELECT data_type, session_id, healthcheck_id, healthcheck_environment_id, kind, lane
          FROM work_items WHERE id = ${workId}`,
  );
}

/** Every session row, as text: what "no session was touched" compares. */
async function sessionRows(db: SqlHandle): Promise<string> {
  const row = await maybeRow<{ all: string | null }>(
    db,
    sql`SELECT string_agg(s::text, '|' ORDER BY s.id) AS all FROM sessions s`,
  );
  return row?.all ?? '';
}

describe.each(['pg', 'pglite'] as const)('healthchecks on the queue (%s)', (driver) => {
  const t = useTestDb(driver);

  it('a healthcheck is a queued poll-lane item with a minted hc_ id of its own and no session', async () => {
    const environmentId = await createEnvironment(t.db, 'self_hosted');
    const before = await sessionRows(t.db);
    const result = await enqueueHealthcheck(t.db, { environmentId });
    expect(result?.created).toBe(true);
    const work = result!.work;
    expect(work).toMatchObject({
      environmentId,
      dataType: 'healthcheck',
      sessionId: null,
      kind: 'tool_exec',
      state: 'queued',
      metadata: {},
      claims: 0,
      leaseExpiresAt: null,
    });
    expect(work.id).toMatch(/^work_[0-9a-hjkmnp-tv-z]{24}$/);
    expect(work.healthcheckId).toMatch(/^hc_[0-9a-hjkmnp-tv-z]{24}$/);
    expect(await stored(t.db, work.id)).toEqual({
      data_type: 'healthcheck',
      session_id: null,
      healthcheck_id: work.healthcheckId,
      healthcheck_environment_id: environmentId,
      kind: 'tool_exec',
      lane: 'poll',
    });
    expect(await sessionRows(t.db)).toBe(before);
  });

  it('is idempotent per environment while one is live; once it is stopped the next is a new one', async () => {
    const environmentId = await createEnvironment(t.db, 'self_hosted');
    const first = await enqueueHealthcheck(t.db, { environmentId });
    const again = await enqueueHealthcheck(t.db, { environmentId });
    expect(again).toEqual({ created: false, work: first!.work });
    // Acked (starting) still holds it.
    await poll(t.db, environmentId, 60_000);
    await ack(t.db, environmentId, first!.work.id);
    expect((await enqueueHealthcheck(t.db, { environmentId }))?.created).toBe(false);
    // Another environment's healthcheck is its own.
    const other = await createEnvironment(t.db, 'self_hosted');
    expect((await enqueueHealthcheck(t.db, { environmentId: other }))?.created).toBe(true);

    await stop(t.db, environmentId, first!.work.id, true);
    const next = await enqueueHealthcheck(t.db, { environmentId });
    expect(next?.created).toBe(true);
    expect(next?.work.id).not.toBe(first!.work.id);
    expect(next?.work.healthcheckId).not.toBe(first!.work.healthcheckId);
    expect(await countWork(t.db)).toBe(3);
  });

  it('asked for ten times at once, an environment gets one healthcheck and every ask returns it', async () => {
    const environmentId = await createEnvironment(t.db, 'self_hosted');
    const results = await Promise.all(
      Array.from({ length: 10 }, () => enqueueHealthcheck(t.db, { environmentId })),
    );
    expect(results.filter((r) => r?.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r?.work.id)).size).toBe(1);
    expect(await countWork(t.db)).toBe(1);
  });

  it('a cloud environment or an unknown one gets null and nothing is written', async () => {
    const cloud = await createEnvironment(t.db, 'cloud');
    expect(await enqueueHealthcheck(t.db, { environmentId: cloud })).toBeNull();
    expect(await enqueueHealthcheck(t.db, { environmentId: 'env_missing' })).toBeNull();
    expect(await countWork(t.db)).toBe(0);
  });

  it('poll hands it out like any poll-lane item — oldest first, reserved, then acked, heartbeated and stopped — and no session is touched', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'self_hosted');
    const check = await enqueueHealthcheck(t.db, { environmentId });
    const { work: sessionItem } = await enqueue(t.db, { environmentId, sessionId, kind: 'tool_exec' });
    const before = await sessionRows(t.db);

    const polled = await poll(t.db, environmentId, 60_000);
    expect(polled).toMatchObject({
      id: check!.work.id,
      dataType: 'healthcheck',
      sessionId: null,
      healthcheckId: check!.work.healthcheckId,
      state: 'queued',
      claims: 1,
      leaseExpiresAt: expect.any(String),
    });
    // The next poll passes over its reservation to the session's item.
    expect((await poll(t.db, environmentId, 60_000))?.id).toBe(sessionItem.id);

    expect((await ack(t.db, environmentId, check!.work.id)).state).toBe('starting');
    const beat = await heartbeat(t.db, environmentId, check!.work.id, NO_HEARTBEAT, 30);
    expect(beat.state).toBe('active');
    const stopped = await stop(t.db, environmentId, check!.work.id, true);
    expect(stopped).toMatchObject({ state: 'stopped', dataType: 'healthcheck', sessionId: null });
    expect(await sessionRows(t.db)).toBe(before);
    expect((await listWork(t.db, environmentId, { fetch: 10 })).map((w) => w.id).sort()).toEqual(
      [check!.work.id, sessionItem.id].sort(),
    );
  });

  it('one whose worker died is handed out again under a new work id, keeping its healthcheck id', async () => {
    const environmentId = await createEnvironment(t.db, 'self_hosted');
    const check = (await enqueueHealthcheck(t.db, { environmentId }))!.work;
    await poll(t.db, environmentId, 60_000);
    await ack(t.db, environmentId, check.id);
    await lapseLease(t.db, check.id);
    const again = await poll(t.db, environmentId, 60_000);
    expect(again).toMatchObject({
      dataType: 'healthcheck',
      healthcheckId: check.healthcheckId,
      state: 'queued',
      acknowledgedAt: null,
      claims: 2,
    });
    expect(again!.id).not.toBe(check.id);
  });

  it('counts in stats and queue samples as a queued poll-lane item, and wakes long polls', async () => {
    const environmentId = await createEnvironment(t.db, 'self_hosted');
    if (driver === 'pg') {
      const { client: listener, received } = await listenToWork(t.url!);
      try {
        const arrived = new Promise<void>((resolve) => listener.once('notification', () => resolve()));
        await enqueueHealthcheck(t.db, { environmentId });
        await arrived;
        expect(received.map((payload) => JSON.parse(payload))).toEqual([{ environment_id: environmentId }]);
      } finally {
        await listener.end();
      }
    } else {
      await enqueueHealthcheck(t.db, { environmentId });
    }
    expect(await stats(t.db, environmentId)).toMatchObject({ depth: 1, pending: 0 });
    await sampleQueues(t.db);
    const sample = await maybeRow<{ depth: number }>(
      t.db,
      sql`SELECT depth FROM queue_samples WHERE environment_id = ${environmentId}`,
    );
    expect(sample?.depth).toBe(1);
  });

  it('session operations pass it by: a session’s live slot, its cancel and its items never reach it', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'self_hosted');
    const check = (await enqueueHealthcheck(t.db, { environmentId }))!.work;
    expect((await enqueue(t.db, { environmentId, sessionId, kind: 'tool_exec' })).created).toBe(true);
    expect(await cancelSession(t.db, sessionId)).toBe(1);
    expect((await stored(t.db, check.id))?.data_type).toBe('healthcheck');
    expect((await poll(t.db, environmentId, 60_000))?.id).toBe(check.id);
  });

  it('deleting the environment deletes its healthchecks with it', async () => {
    const environmentId = await createEnvironment(t.db, 'self_hosted');
    const check = (await enqueueHealthcheck(t.db, { environmentId }))!.work;
    await poll(t.db, environmentId, 60_000);
    const kept = await createEnvironment(t.db, 'self_hosted');
    const other = (await enqueueHealthcheck(t.db, { environmentId: kept }))!.work;
    expect(await deleteEnvironment(t.db, environmentId)).toBe('deleted');
    expect(await stored(t.db, check.id)).toBeNull();
    expect(await stored(t.db, other.id)).not.toBeNull();
  });

  it('the database refuses an item that is neither a session’s nor a healthcheck on the poll lane', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'self_hosted');
    const cloud = await createEnvironment(t.db, 'cloud');
    const insert = (columns: string, values: string) =>
      t.db.execute(
        sql.raw(`INSERT INTO work_items (id, environment_id, kind, lane, ${columns}) VALUES (${values})`),
      );
    const refused = [
      // a session item without a session
      insert('data_type', `'work_a', '${environmentId}', 'tool_exec', 'poll', 'session'`),
      // a healthcheck that names a session
      insert(
        'data_type, session_id, healthcheck_id, healthcheck_environment_id',
        `'work_b', '${environmentId}', 'tool_exec', 'poll', 'healthcheck', '${sessionId}', 'hc_b', '${environmentId}'`,
      ),
      // a healthcheck without its own id
      insert(
        'data_type, healthcheck_environment_id',
        `'work_c', '${environmentId}', 'tool_exec', 'poll', 'healthcheck', '${environmentId}'`,
      ),
      // a healthcheck on the claim lane, or of another kind
      insert(
        'data_type, healthcheck_id, healthcheck_environment_id',
        `'work_d', '${cloud}', 'tool_exec', 'claim', 'healthcheck', 'hc_d', '${cloud}'`,
      ),
      insert(
        'data_type, healthcheck_id, healthcheck_environment_id',
        `'work_e', '${environmentId}', 'model_turn', 'poll', 'healthcheck', 'hc_e', '${environmentId}'`,
      ),
      // a healthcheck tied to another environment than its own, or to none that exists
      insert(
        'data_type, healthcheck_id, healthcheck_environment_id',
        `'work_f', '${environmentId}', 'tool_exec', 'poll', 'healthcheck', 'hc_f', '${cloud}'`,
      ),
      insert(
        'data_type, healthcheck_id, healthcheck_environment_id',
        `'work_g', 'env_missing', 'tool_exec', 'poll', 'healthcheck', 'hc_g', 'env_missing'`,
      ),
      // a session item with a healthcheck id
      insert(
        'data_type, session_id, healthcheck_id',
        `'work_h', '${environmentId}', 'tool_exec', 'poll', 'session', '${sessionId}', 'hc_h'`,
      ),
    ];
    // 23514: the data check; 23503: the healthcheck's environment key.
    const codes = await Promise.all(refused.map((attempt) => attempt.then(() => 'written', pgCode)));
    expect(codes).toEqual(['23514', '23514', '23514', '23514', '23514', '23514', '23503', '23514']);
    expect(await countWork(t.db)).toBe(0);
  });
});

describe.each(['pg', 'pglite'] as const)('environmentHealthchecks (%s)', (driver) => {
  const t = useTestDb(driver);

  it('nothing asked: neither answered nor waiting', async () => {
    const environmentId = await createEnvironment(t.db, 'self_hosted');
    expect(await environmentHealthchecks(t.db, environmentId)).toEqual({ answered: null, waiting: null });
  });

  it('a queued one is waiting; once a worker acks it, it is the answered one, and stays so through its stop', async () => {
    const environmentId = await createEnvironment(t.db, 'self_hosted');
    const check = (await enqueueHealthcheck(t.db, { environmentId }))!.work;
    expect(await environmentHealthchecks(t.db, environmentId)).toEqual({
      answered: null,
      waiting: check,
    });
    const polled = await poll(t.db, environmentId, 60_000);
    expect((await environmentHealthchecks(t.db, environmentId)).waiting).toEqual(polled);

    const acked = await ack(t.db, environmentId, check.id);
    expect(await environmentHealthchecks(t.db, environmentId)).toEqual({ answered: acked, waiting: null });
    const stopped = await stop(t.db, environmentId, check.id, true);
    const read = await environmentHealthchecks(t.db, environmentId);
    expect(read).toEqual({ answered: stopped, waiting: null });
    expect(read.answered).toMatchObject({
      state: 'stopped',
      acknowledgedAt: expect.any(String),
      stoppedAt: expect.any(String),
    });
  });

  it('the answered one is the last acknowledged; a newer unanswered one waits beside it; other environments’ and session items never show', async () => {
    const { environmentId, sessionId } = await setupSession(t.db, 'self_hosted');
    for (let i = 0; i < 2; i++) {
      const check = (await enqueueHealthcheck(t.db, { environmentId }))!.work;
      await poll(t.db, environmentId, 60_000);
      await ack(t.db, environmentId, check.id);
      await stop(t.db, environmentId, check.id, true);
    }
    const last = (await listWork(t.db, environmentId, { fetch: 1 }))[0]!;
    const waiting = (await enqueueHealthcheck(t.db, { environmentId }))!.work;
    const { work: sessionItem } = await enqueue(t.db, { environmentId, sessionId, kind: 'tool_exec' });
    await poll(t.db, environmentId, 60_000);
    await poll(t.db, environmentId, 60_000);
    await ack(t.db, environmentId, sessionItem.id);
    const other = await createEnvironment(t.db, 'self_hosted');
    const foreign = (await enqueueHealthcheck(t.db, { environmentId: other }))!.work;
    await poll(t.db, other, 60_000);
    await ack(t.db, other, foreign.id);

    const read = await environmentHealthchecks(t.db, environmentId);
    expect(read.answered?.id).toBe(last.id);
    expect(read.answered?.state).toBe('stopped');
    expect(read.waiting).toMatchObject({ id: waiting.id, state: 'queued', claims: 1 });
  });

  it('an acknowledgement lost to a re-hand-out (its worker died) no longer counts as an answer', async () => {
    const environmentId = await createEnvironment(t.db, 'self_hosted');
    const check = (await enqueueHealthcheck(t.db, { environmentId }))!.work;
    await poll(t.db, environmentId, 60_000);
    await ack(t.db, environmentId, check.id);
    await lapseLease(t.db, check.id);
    const again = await poll(t.db, environmentId, 60_000);
    expect(await environmentHealthchecks(t.db, environmentId)).toEqual({ answered: null, waiting: again });
  });
});
