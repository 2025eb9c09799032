/**
 * Crashed and paused workers (docs/guarantees.md), with real processes: the Node server
 * (`startServer`) and a customer's worker (`workers/sdk-worker.ts`, the official SDK) as a
 * child process that takes an item and heartbeats it forever. The test kills it with SIGKILL
 * (or freezes it with SIGSTOP) mid-lease and plays the replacement worker itself, through
 * the SDK, polling every POLL_TICK_MS.
 *
 * Time is the database's: the trigger of `contention/history.ts` records the re-hand-out's
 * transaction time next to the dead attempt's lease as stored, so "re-offered no earlier than
 * its lease allows and within one poll tick of it" is judged on one clock. The wait for the
 * lease to lapse is real (it is the subject); the lease is kept short for that: the worker's
 * heartbeats ask for desired_ttl_seconds = TTL_SECONDS, and the first heartbeat replaces
 * ack's 30 s startup lease, so the dead attempt's lease ends TTL_SECONDS after its last
 * heartbeat. Nothing sweeps on the wire: a lapsed item is re-offered by the next poll of its
 * environment (the server's 60 s housekeeping only settles abandoned wind-downs), so the tick
 * that bounds the re-offer is the replacement's poll period.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import Anthropic, { NotFoundError } from '@anthropic-ai/sdk';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueEnvironmentKey } from '../../src/auth/credentials.js';
import { rows } from '../../src/db/handle.js';
import { enqueue } from '../../src/queue/enqueue.js';
import { openTestDb, type TestDb } from '../helpers/db.js';
import { createEnvironment, createSession, readWork } from '../helpers/factories.js';
import { atScale, recordFault } from '../helpers/faults.js';
import { type RunningServer, serverEnvironment, startServer } from '../helpers/server.js';
import { type Rehandout, recordWorkHistory, rehandoutsOf } from './contention/history.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const WORKER = path.join(import.meta.dirname, 'workers/sdk-worker.ts');
/** The dead attempt's lease: short, so a trial waits seconds, yet ≥ 3 beats of a healthy worker. */
const TTL_SECONDS = 2;
/** The replacement's poll period: the "tick" a re-offer may lag the lease's end by. */
const POLL_TICK_MS = 250;
/** One poll's own round trip on top of the tick, generous for a loaded 2-core machine. */
const ROUND_TRIP_SLACK_MS = 750;
/** Bounds every wait, so a wedged worker fails the trial instead of the suite's timeout. */
const STEP_TIMEOUT_MS = 30_000;

let testDb: TestDb;
let server: RunningServer;
const children = new Set<ChildProcess>();

beforeAll(async () => {
  testDb = await openTestDb('pg');
  await recordWorkHistory(testDb.db);
  server = await startServer({ databaseUrl: testDb.url! });
}, 120_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await server?.stop();
  await testDb?.close();
});

interface WorkerLine {
  event: 'beat' | 'refused' | 'stopped' | 'error';
  id: string;
  call?: string;
  status?: number | string | null;
  last_heartbeat?: string;
}

/** The worker as a single real process (`node --import tsx`: no wrapper between it and the signal). */
function startWorker(environmentId: string, key: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER], {
    cwd: ROOT,
    env: {
      ...serverEnvironment(),
      LEASEHOLD_URL: server.baseURL,
      LEASEHOLD_ENVIRONMENT_ID: environmentId,
      LEASEHOLD_ENVIRONMENT_KEY: key,
      LEASEHOLD_TTL_SECONDS: String(TTL_SECONDS),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4096);
  });
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.once('exit', (code, signal) => {
      children.delete(child);
      resolve(signal ?? code);
    }),
  );
  const lines: WorkerLine[] = [];
  const waiters: Array<() => void> = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    lines.push(JSON.parse(line) as WorkerLine);
    for (const wake of waiters.splice(0)) wake();
  });
  /** Resolves with the `n`th line of `event` (1-based), bounded by STEP_TIMEOUT_MS. */
  const nth = async (event: WorkerLine['event'], n: number): Promise<WorkerLine> => {
    const deadline = Date.now() + STEP_TIMEOUT_MS;
    for (;;) {
      const seen = lines.filter((l) => l.event === event);
      if (seen.length >= n) return seen[n - 1]!;
      const failed = lines.find((l) => l.event === 'error');
      if (failed || Date.now() > deadline || child.exitCode !== null) {
        throw new Error(`worker: no ${event} #${n}; lines ${JSON.stringify(lines)}; stderr ${stderr}`);
      }
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, 200);
      });
    }
  };
  return { child, lines, exited, nth };
}

/** One self_hosted environment with a key and one queued tool_exec item. */
async function environmentWithItem() {
  const environmentId = await createEnvironment(testDb.db, 'self_hosted');
  const { key } = await issueEnvironmentKey(testDb.db, environmentId, 'fault worker', null);
  const sessionId = await createSession(testDb.db, environmentId);
  await enqueue(testDb.db, { environmentId, sessionId, kind: 'tool_exec', traceContext: null });
  const work = new Anthropic({ apiKey: key, baseURL: server.baseURL }).beta.environments.work;
  return { environmentId, sessionId, key, work };
}

/** The replacement: polls every tick until the environment offers an item again (bounded). */
async function replacementPoll(work: Anthropic['beta']['environments']['work'], environmentId: string) {
  const deadline = Date.now() + TTL_SECONDS * 1000 + STEP_TIMEOUT_MS;
  let polls = 0;
  for (;;) {
    polls++;
    const item = await work.poll(environmentId);
    if (item) return { item, polls };
    if (Date.now() > deadline) throw new Error(`nothing re-offered in ${environmentId} after ${polls} polls`);
    await new Promise((r) => setTimeout(r, POLL_TICK_MS));
  }
}

/** The single re-hand-out of the attempt `deadId`, as the database recorded it. */
async function rehandout(deadId: string, newId: string): Promise<Rehandout> {
  const found = await rehandoutsOf(testDb.db, deadId);
  expect(found).toHaveLength(1);
  expect(found[0]!.newId).toBe(newId);
  return found[0]!;
}

/** How many times the database moved the session's item into `stopped`. */
async function completionsOf(sessionId: string): Promise<number> {
  const [row] = await rows<{ n: number }>(
    testDb.db,
    sql`SELECT count(*)::int AS n FROM work_history
         WHERE session_id = ${sessionId} AND op = 'U' AND new_state = 'stopped' AND old_state <> 'stopped'`,
  );
  return row!.n;
}

/** Runs `trial` for 0..n-1 with at most `parallel` at once; the results in order. */
async function trials<T>(n: number, parallel: number, trial: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(n);
  let next = 0;
  const lanes = Array.from({ length: Math.min(parallel, n) }, async () => {
    while (next < n) {
      const i = next++;
      results[i] = await trial(i);
    }
  });
  await Promise.all(lanes);
  return results;
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { min: s[0]!, median: s[Math.floor(s.length / 2)]!, max: s[s.length - 1]! };
};

describe('a worker process that dies mid-lease', () => {
  it('SIGKILL: the item is re-offered no earlier than its lease ends and within one poll tick, under a fresh id; the replacement finishes it; the dead id is 404', async (ctx) => {
    const n = atScale(3, 20);
    const parallel = atScale(3, 5);
    const started = Date.now();
    const delays = await trials(n, parallel, async (i) => {
      const { environmentId, sessionId, key, work } = await environmentWithItem();
      const worker = startWorker(environmentId, key);
      // Killed at a varying point of a healthy lease: after its first, second or third heartbeat.
      const lastBeat = await worker.nth('beat', 1 + (i % 3));
      const deadId = lastBeat.id;
      worker.child.kill('SIGKILL');
      expect(await worker.exited).toBe('SIGKILL');

      const { item } = await replacementPoll(work, environmentId);
      expect(item.id).not.toBe(deadId);
      const moved = await rehandout(deadId, item.id);
      expect(moved.ttlMs).toBe(TTL_SECONDS * 1000);
      expect(moved.delayMs).toBeGreaterThan(0);
      expect(moved.delayMs).toBeLessThanOrEqual(POLL_TICK_MS + ROUND_TRIP_SLACK_MS);

      const params = { environment_id: environmentId };
      await work.ack(item.id, params);
      await work.heartbeat(item.id, { ...params, expected_last_heartbeat: 'NO_HEARTBEAT' });
      await work.stop(item.id, { ...params, force: true });
      expect((await readWork(testDb.db, item.id))?.state).toBe('stopped');
      expect(await completionsOf(sessionId)).toBe(1);

      const admin = new Anthropic({ apiKey: server.adminKey, baseURL: server.baseURL }).beta.environments
        .work;
      const stale = { ...params, expected_last_heartbeat: lastBeat.last_heartbeat! };
      await expect(admin.retrieve(deadId, params)).rejects.toBeInstanceOf(NotFoundError);
      await expect(work.heartbeat(deadId, stale)).rejects.toBeInstanceOf(NotFoundError);
      await expect(work.ack(deadId, params)).rejects.toBeInstanceOf(NotFoundError);
      await expect(work.stop(deadId, { ...params, force: true })).rejects.toBeInstanceOf(NotFoundError);
      return moved.delayMs;
    });
    const d = stats(delays);
    recordFault(ctx, {
      load: `${n} trials, ${parallel} at once; SDK worker process, heartbeat ttl ${TTL_SECONDS} s; replacement polls every ${POLL_TICK_MS} ms`,
      faults: 'SIGKILL mid-lease, after the 1st, 2nd or 3rd heartbeat',
      result:
        `${n}/${n} re-offered under a fresh id, 0 early; delay after the lease ended (DB time) ` +
        `min ${d.min.toFixed(0)} / median ${d.median.toFixed(0)} / max ${d.max.toFixed(0)} ms ` +
        `(bound ${POLL_TICK_MS + ROUND_TRIP_SLACK_MS} ms); replacement finished ${n}/${n}; dead ids 404 on ` +
        `get/heartbeat/ack/stop; ${((Date.now() - started) / 1000).toFixed(1)} s`,
    });
  });

  it("SIGSTOP past its lease: the item goes on under a fresh id; once resumed, the stale worker's heartbeat and stop are 404 and the new attempt is unchanged", async (ctx) => {
    const n = atScale(2, 5);
    const started = Date.now();
    await trials(n, n, async () => {
      const { environmentId, sessionId, key, work } = await environmentWithItem();
      const worker = startWorker(environmentId, key);
      const { id: staleId } = await worker.nth('beat', 1);
      worker.child.kill('SIGSTOP');

      const { item } = await replacementPoll(work, environmentId);
      const moved = await rehandout(staleId, item.id);
      expect(moved.delayMs).toBeGreaterThan(0);
      const params = { environment_id: environmentId };
      await work.ack(item.id, params);
      const beat = await work.heartbeat(item.id, {
        ...params,
        expected_last_heartbeat: 'NO_HEARTBEAT',
        desired_ttl_seconds: 60,
      });
      const before = await readWork(testDb.db, item.id);

      worker.child.kill('SIGCONT');
      // The resumed worker beats on its old id, is refused, tries a force stop, is refused, exits.
      expect(await worker.nth('refused', 1)).toMatchObject({ call: 'heartbeat', id: staleId, status: 404 });
      expect(await worker.nth('refused', 2)).toMatchObject({ call: 'stop', id: staleId, status: 404 });
      expect(await worker.exited).toBe(0);

      expect(await readWork(testDb.db, item.id)).toEqual(before);
      expect(before).toMatchObject({ state: 'active', lastHeartbeat: beat.last_heartbeat });
      await work.stop(item.id, { ...params, force: true });
      expect((await readWork(testDb.db, item.id))?.state).toBe('stopped');
      expect(await completionsOf(sessionId)).toBe(1);
    });
    recordFault(ctx, {
      load: `${n} trials at once; SDK worker process, heartbeat ttl ${TTL_SECONDS} s`,
      faults: 'SIGSTOP until its lease lapsed and the item was re-handed out, then SIGCONT',
      result:
        `${n}/${n}: the resumed worker's heartbeat and force stop answered 404 (its id was retired), ` +
        `the new attempt's row byte-identical, 1 completion; ${((Date.now() - started) / 1000).toFixed(1)} s`,
    });
  });
});
