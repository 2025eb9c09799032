/**
 * The Worker as deployed, inside workerd: the work API over the Neon driver (a Pool per
 * request), and the scheduled housekeeping.
 */
import {
  createExecutionContext,
  createScheduledController,
  env,
  waitOnExecutionContext,
} from 'cloudflare:test';
import { exports } from 'cloudflare:workers';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import worker from '../../functions/worker.js';
import { issueEnvironmentKey } from '../../src/auth/credentials.js';
import { maybeRow } from '../../src/db/handle.js';
import { connectJournal, ensureJournalStream, Journal, read } from '../../src/journal/index.js';
import { enqueue } from '../../src/queue/enqueue.js';
import { setupSession } from '../helpers/factories.js';
import { bindings, withDb } from './db.js';

const call = (path: string, key: string, init: RequestInit = {}) =>
  (exports as unknown as { default: { fetch(r: Request): Promise<Response> } }).default.fetch(
    new Request(`http://leasehold.test${path}`, { ...init, headers: { authorization: `Bearer ${key}` } }),
  );

describe('the Worker under workerd', () => {
  it('serves a poll → ack → heartbeat → stop cycle', async () => {
    const { environmentId, key, workId } = await withDb(async (db) => {
      const s = await setupSession(db, 'self_hosted');
      const issued = await issueEnvironmentKey(db, s.environmentId, 'worker test', null);
      const { work } = await enqueue(db, { ...s, kind: 'tool_exec' });
      return { environmentId: s.environmentId, key: issued.key, workId: work.id };
    });
    const base = `/v1/environments/${environmentId}/work`;
    const polled = (await (await call(`${base}/poll`, key)).json()) as { id: string; state: string };
    expect(polled).toMatchObject({ id: workId, state: 'queued' });
    const acked = (await (await call(`${base}/${workId}/ack`, key, { method: 'POST' })).json()) as {
      state: string;
    };
    expect(acked.state).toBe('starting');
    const beat = await call(`${base}/${workId}/heartbeat?expected_last_heartbeat=NO_HEARTBEAT`, key, {
      method: 'POST',
    });
    expect(await beat.json()).toMatchObject({ state: 'active', lease_extended: true });
    const stopped = await call(`${base}/${workId}/stop`, key, { method: 'POST' });
    expect(stopped.status).toBe(200);
    expect(await stopped.json()).toMatchObject({
      id: workId,
      state: 'stopping',
      stop_requested_at: expect.any(String),
    });
    const row = await withDb((db) =>
      maybeRow<{ state: string }>(db, sql`SELECT state FROM work_items WHERE id = ${workId}`),
    );
    expect(row?.state).toBe('stopping');
  });

  it('an empty long poll answers null after re-polling within block_ms', async () => {
    const { environmentId, key } = await withDb(async (db) => {
      const s = await setupSession(db, 'self_hosted');
      return {
        environmentId: s.environmentId,
        key: (await issueEnvironmentKey(db, s.environmentId, 'w', null)).key,
      };
    });
    const started = Date.now();
    const res = await call(`/v1/environments/${environmentId}/work/poll?block_ms=300`, key);
    expect(await res.text()).toBe('null\n');
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
  });

  it('a Worker without DATABASE_URL answers 500 naming the missing setting', async () => {
    const ctx = createExecutionContext();
    const res = await worker.fetch(new Request('http://leasehold.test/openapi.json'), {}, ctx);
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(500);
    expect(await res.json()).toMatchObject({
      type: 'error',
      error: { type: 'api_error', message: expect.stringContaining('DATABASE_URL') },
    });
  });

  it('a database it cannot reach is a 503 with retry-after in the error envelope, not a 500', async () => {
    // The same proxy, told to reach a port where nothing listens: the connection fails.
    const unreachable = new URL(bindings.DATABASE_URL);
    unreachable.port = '1';
    const ctx = createExecutionContext();
    const res = await worker.fetch(
      new Request('http://leasehold.test/v1/environments', { headers: { authorization: 'Bearer lh_x' } }),
      { ...bindings, DATABASE_URL: unreachable.toString() },
      ctx,
    );
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
  });

  it('the scheduled handler finalizes an abandoned wind-down', async () => {
    const workId = await withDb(async (db) => {
      const s = await setupSession(db, 'self_hosted');
      const { work } = await enqueue(db, { ...s, kind: 'tool_exec' });
      await db.execute(
        sql`UPDATE work_items SET state = 'stopping', lease_expires_at = now() - interval '1 minute' WHERE id = ${work.id}`,
      );
      return work.id;
    });
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ cron: '* * * * *' }), env as never, ctx);
    await waitOnExecutionContext(ctx);
    const row = await withDb((db) =>
      maybeRow<{ state: string; stopped: boolean }>(
        db,
        sql`SELECT state, stopped_at IS NOT NULL AS stopped FROM work_items WHERE id = ${workId}`,
      ),
    );
    expect(row).toEqual({ state: 'stopped', stopped: true });
  });

  it("the scheduled handler deletes a long-stopped item and purges a deleted session's journal over a NATS connection of its own", async () => {
    const natsUrl = (env as unknown as { NATS_URL: string }).NATS_URL;
    const run = `sess_wk${Date.now()}`;
    const nc = await connectJournal(natsUrl, { reconnect: false });
    try {
      await ensureJournalStream(await jetstreamManager(nc));
      const journal = await Journal.open(jetstream(nc), {
        runId: run,
        stepId: 'model_turn',
        iteration: 0,
        attempt: 1,
        delivered: 1,
        streamSeq: 0,
      });
      await journal.append('entry', { note: 'before the session was deleted' });
      const workId = await withDb(async (db) => {
        const s = await setupSession(db, 'self_hosted');
        const { work } = await enqueue(db, { ...s, kind: 'tool_exec' });
        await db.execute(
          sql`UPDATE work_items SET state = 'stopped', stopped_at = now() - interval '8 days' WHERE id = ${work.id}`,
        );
        // What deleting the session left, past the purge's grace.
        await db.execute(
          sql`INSERT INTO journal_purges (run_id, requested_at) VALUES (${run}, now() - interval '3 hours')`,
        );
        return work.id;
      });
      const ctx = createExecutionContext();
      await worker.scheduled(createScheduledController({ cron: '* * * * *' }), env as never, ctx);
      await waitOnExecutionContext(ctx);

      expect(await read(jetstream(nc), run, 'model_turn')).toEqual([]);
      const left = await withDb((db) =>
        maybeRow<{ work: number; purges: number }>(
          db,
          sql`SELECT (SELECT count(*) FROM work_items WHERE id = ${workId})::int AS work,
                     (SELECT count(*) FROM journal_purges WHERE run_id = ${run})::int AS purges`,
        ),
      );
      expect(left).toEqual({ work: 0, purges: 0 });
    } finally {
      await nc.close();
    }
  });

  it('with LEASEHOLD_RETAIN_EMPTY_PLATFORM_SESSIONS the scheduled handler deletes an emptied platform session in a transaction over the Neon driver and queues its purge', async () => {
    const { sessionId, kept } = await withDb(async (db) => {
      const s = await setupSession(db, 'cloud');
      const other = await setupSession(db, 'cloud');
      await db.execute(
        sql`UPDATE sessions SET emptied_at = now() - interval '2 days' WHERE id IN (${s.sessionId}, ${other.sessionId})`,
      );
      // Work arrived after the stamp: this one stays. (A kind no other file here claims: the
      // files share the database.)
      await enqueue(db, { ...other, kind: 'mcp_exec' });
      return { sessionId: s.sessionId, kept: other.sessionId };
    });
    const ctx = createExecutionContext();
    const withRetention = { ...(env as object), LEASEHOLD_RETAIN_EMPTY_PLATFORM_SESSIONS: '1d' };
    await worker.scheduled(createScheduledController({ cron: '* * * * *' }), withRetention as never, ctx);
    await waitOnExecutionContext(ctx);
    const left = await withDb((db) =>
      maybeRow<{ gone: boolean; purge: boolean; kept: boolean }>(
        db,
        sql`SELECT NOT EXISTS (SELECT 1 FROM sessions WHERE id = ${sessionId}) AS gone,
                   EXISTS (SELECT 1 FROM journal_purges WHERE run_id = ${sessionId}) AS purge,
                   EXISTS (SELECT 1 FROM sessions WHERE id = ${kept} AND emptied_at IS NULL) AS kept`,
      ),
    );
    expect(left).toEqual({ gone: true, purge: true, kept: true });
    await withDb(async (db) => {
      await db.execute(sql`DELETE FROM work_items WHERE session_id = ${kept}`);
    });
  });
});
