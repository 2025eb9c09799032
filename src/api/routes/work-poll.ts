import type { Context, Hono } from 'hono';
import * as z from 'zod/mini';
import { isDatabaseUnavailable } from '../../db/errors.js';
import { rearm, rearmFor } from '../../loop/index.js';
import { DEFAULT_RECLAIM_MS, poll, type Work } from '../../queue/index.js';
import { authorize, ENVIRONMENT_KEY } from '../auth.js';
import { badRequest } from '../errors.js';
import { document, errorEnvelope } from '../openapi.js';
import { MAX_LONG_POLLS_PER_KEY, MAX_LONG_POLLS_PER_PROCESS } from '../poll-gate.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { pollingWake } from '../wake.js';
import { toWireWork, wireWorkSchema } from '../wire.js';
import { environmentId, lenientInt, WORK_BASE, workCalls } from './work-scope.js';

/** The SDK's cap on a long poll: "long" here means under a second. */
export const MAX_BLOCK_MS = 999;
export const MAX_RECLAIM_MS = 600_000;
const MAX_WORKER_ID = 256;

/**
 * GET /work/poll — hands a worker the oldest available item (state `queued`) or `null`;
 * `reclaim_older_than_ms` is this worker's own window: un-acked items handed out longer ago
 * than that are offered to it again, under a fresh id. With `block_ms` it waits up to that long for work,
 * holding no transaction or pooled connection while it waits. Long polls are capped per
 * environment key and per app (`poll-gate.ts`): over a cap → 429 with `retry-after`.
 */
export function registerWorkPoll(app: Hono<AppEnv>): void {
  document({
    method: 'get',
    path: `${WORK_BASE}/poll`,
    summary: 'Poll for work (long poll with block_ms)',
    credentials: ['environment_key'],
    query: {
      block_ms: {
        schema: z.int().check(z.gte(1)),
        description: 'wait up to this long for work (clamped to 999)',
      },
      reclaim_older_than_ms: {
        schema: z.int(),
        description:
          'offer again items handed out (and not acknowledged) longer ago than this; default 5000, max 600000',
      },
    },
    responses: {
      200: { description: 'a work item (state queued), or null', schema: z.nullable(wireWorkSchema) },
      429: {
        description: `rate_limit_error: this key has ${MAX_LONG_POLLS_PER_KEY}, or the server ${MAX_LONG_POLLS_PER_PROCESS}, long polls open; retry-after: 1`,
        schema: errorEnvelope,
      },
    },
  });
  app.get(`${WORK_BASE}/poll`, async (c) => {
    const env = environmentId(c);
    const caller = await authorize(c, ENVIRONMENT_KEY, env);
    const blockMs = parseBlockMs(c.req.queries('block_ms'));
    const reclaimMs = lenientInt(c.req.query('reclaim_older_than_ms'), DEFAULT_RECLAIM_MS, MAX_RECLAIM_MS);
    const workerId = c.req.header('anthropic-worker-id')?.trim();
    if (workerId && workerId.length > MAX_WORKER_ID)
      throw badRequest(`Anthropic-Worker-ID is longer than ${MAX_WORKER_ID}`);
    // Admitted after every 400 and before any query, so a refused poll costs the database
    // nothing; an unknown key never gets here (401), so it cannot use up a real key's slots.
    const release = blockMs === null ? null : c.get('pollGate').admit(caller.keyId);
    let work: Work | null;
    try {
      const pollOnce = pollerOf(c, env, reclaimMs, workerId);
      work = blockMs === null ? await pollOnce() : await longPoll(c, env, pollOnce, blockMs);
    } finally {
      release?.();
    }
    if (!work) return reply(c, null);
    // Handed out again: its worker died holding it, and the session's open calls count one
    // more delivery (bounded: see src/loop/rearm.ts). Rare, so the first hand-out pays nothing.
    const { db } = c.get('deps');
    if (
      work.sessionId &&
      rearmFor(work) === 'redelivered' &&
      (await rearm(db, work.sessionId, 'redelivered')).failed > 0
    ) {
      c.get('deps').turnEnqueued?.();
    }
    const headers: Record<string, string> = {};
    if (work.traceContext?.traceparent) headers.traceparent = work.traceContext.traceparent;
    if (work.traceContext?.tracestate) headers.tracestate = work.traceContext.tracestate;
    return reply(c, toWireWork(work), 200, headers);
  });
}

/**
 * One attempt of this request's poll. Telemetry for `workers_polling` rides on the first
 * attempt's statement, at most every few seconds per worker (poll-record.ts); a failure to
 * record must never fail the poll, so an attempt that failed with it is made again without.
 */
function pollerOf(
  c: Context<AppEnv>,
  env: string,
  reclaimMs: number,
  workerId: string | undefined,
): () => Promise<Work | null> {
  const { db, log } = c.get('deps');
  const calls = workCalls(c);
  const records = c.get('pollRecords');
  let record = workerId && records.due(env, workerId) ? workerId : undefined;
  return async () => {
    if (record === undefined) return calls.poll({ environmentId: env, reclaimMs });
    const recording = record;
    record = undefined;
    try {
      return await poll(db, env, reclaimMs, recording);
    } catch (err) {
      records.forget(env, recording);
      // The database away fails the poll itself too: answer that (503), not a second try.
      if (isDatabaseUnavailable(err)) throw err;
      (log ?? console).warn('record worker poll', { environmentId: env, error: String(err) });
      return calls.poll({ environmentId: env, reclaimMs });
    }
  };
}

/**
 * Polls until an item turns up, `blockMs` passes or the client goes away. The environment is
 * watched before the first read, so an enqueue between an empty read and the wait still wakes
 * it; between reads it holds no transaction. A watch that must start listening (`listen`: a
 * LISTEN on this request's own connection) is started before the first read or, where the
 * environment's last poll found work (`IdlePolls`), after an empty one, followed by a second
 * read. A watch that `endsAtDeadline` answers null when its wait runs out, without one more
 * read.
 */
async function longPoll(
  c: Context<AppEnv>,
  env: string,
  pollOnce: () => Promise<Work | null>,
  blockMs: number,
): Promise<Work | null> {
  const deps = c.get('deps');
  const idle = c.get('idlePolls');
  const signal = c.req.raw.signal;
  const watch = (deps.wake ?? pollingWake).watch(env);
  const deadline = performance.now() + blockMs;
  try {
    let work: Work | null;
    if (!watch.listen) {
      work = await pollOnce();
    } else if (idle.idle(env)) {
      await watch.listen();
      work = await pollOnce();
      idle.note(env, work !== null);
    } else {
      work = await pollOnce();
      idle.note(env, work !== null);
      if (!work) {
        await watch.listen();
        work = await pollOnce();
      }
    }
    while (!work && !signal.aborted) {
      const remaining = deadline - performance.now();
      if (remaining <= 0) break;
      const woken = await watch.wait(remaining, signal);
      if (signal.aborted || (!woken && watch.endsAtDeadline)) break;
      work = await pollOnce();
    }
    return work;
  } finally {
    watch.close();
  }
}

/** `block_ms`: absent → null (no wait); once, an integer ≥ 1 (clamped to 999); anything else → 400. */
function parseBlockMs(values: string[] | undefined): number | null {
  const given = values?.filter((v) => v !== '') ?? [];
  if (given.length === 0) return null;
  if (given.length > 1) throw badRequest('block_ms must be given at most once');
  const value = given[0]!;
  if (!/^\d{1,16}$/.test(value) || Number(value) < 1) {
    throw badRequest(`block_ms must be an integer between 1 and ${MAX_BLOCK_MS}`);
  }
  return Math.min(Number(value), MAX_BLOCK_MS);
}
