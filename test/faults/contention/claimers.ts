/**
 * The contention test's claimers, one loop per kind of client, all sharing one `Run` that
 * records every holder write they make (`Outcome`) and knows when the work is done:
 *
 * - in-process: `claimMany` (random batch k ∈ [1, 10]) and `complete`/`completeMany` over the
 *   claimer's own `pg` connection;
 * - platform: the claim lane over HTTP (`/v1/platform/work/claim`, `…/complete`);
 * - wire: the official SDK against the server — raw poll/ack/heartbeat/stop, or `WorkPoller`.
 *
 * Early lease loss: with probability `lossRate` a holder is paused — the test moves its lease
 * into the past, as a GC pause or SIGSTOP would leave it — and set aside as a stale holder. Once
 * the item was handed to someone else, the stale holder makes the writes a resumed holder would
 * (extend + complete; heartbeat + stop), every one of which must be refused.
 */
import Anthropic, { APIError } from '@anthropic-ai/sdk';
import { sql } from 'drizzle-orm';
import { connectPg } from '../../../src/db/drivers/node-pg.js';
import { type Database, maybeRow } from '../../../src/db/handle.js';
import { claimMany, complete, completeMany, extend, LeaseLostError } from '../../../src/queue/index.js';
import type { Item, WorkKind } from '../../../src/queue/types.js';
import { backdateLease, lapseLease } from '../../helpers/factories.js';
import type { Lane, Outcome } from './audit.js';

/** The claim lane's kinds (tool_exec only from cloud environments; `claim` sorts that out). */
export const CLAIM_KINDS: readonly WorkKind[] = [
  'model_turn',
  'web_exec',
  'mcp_exec',
  'outputs_harvest',
  'tool_exec',
];
/** Leases far longer than any honest holder needs here, so only the injected losses lose one. */
const CLAIM_TTL_MS = 60_000;
const WIRE_TTL_SECONDS = 60;
/** How long a stale holder waits for its item to be handed on before that counts as a failure. */
const HANDED_ON_TIMEOUT_MS = 60_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)]!;

export class Run {
  readonly outcomes: Outcome[] = [];
  readonly stale: Promise<void>[] = [];
  readonly accepted: Record<Lane, number> = { claim: 0, platform: 0, wire: 0 };
  readonly lastCompletionAt: Record<Lane, number> = { claim: 0, platform: 0, wire: 0 };
  readonly failures: string[] = [];
  injected = 0;
  batchOverflows = 0;
  readonly startedAt = Date.now();
  private readonly left: { claim: number; wire: number };

  constructor(
    readonly db: Database,
    units: { claim: number; wire: number },
    readonly lossRate: number,
    readonly signal: AbortSignal,
  ) {
    this.left = { ...units };
  }

  /** True once every unit of the lane group is completed (or the run was aborted). */
  done(group: 'claim' | 'wire'): boolean {
    return this.left[group] <= 0 || this.signal.aborted;
  }

  /** Decides whether this holder is paused past its lease now. */
  losesLease(): boolean {
    return Math.random() < this.lossRate;
  }

  record(o: Outcome): void {
    this.outcomes.push(o);
    const finishing = o.call === 'complete' || o.call === 'stop';
    if (o.outcome !== 'accepted' || !finishing) return;
    this.accepted[o.lane]++;
    this.lastCompletionAt[o.lane] = Date.now();
    this.left[o.lane === 'wire' ? 'wire' : 'claim']--;
  }

  /** Runs a stale holder in the background: waits until `handedOn`, then makes its writes. */
  spawnStale(what: string, handedOn: () => Promise<boolean>, writes: () => Promise<void>): Promise<void> {
    this.injected++;
    const task = (async () => {
      const deadline = Date.now() + HANDED_ON_TIMEOUT_MS;
      while (!(await handedOn())) {
        if (Date.now() > deadline) {
          this.failures.push(`${what}: never handed on within ${HANDED_ON_TIMEOUT_MS} ms`);
          return;
        }
        await sleep(100);
      }
      await writes();
    })().catch((err: unknown) => void this.failures.push(`${what}: ${String(err)}`));
    this.stale.push(task);
    return task;
  }

  /** Claim lane: true once the item was handed out again after the holder's `claims`th hand-out. */
  claimedAgain(id: string, claims: number): () => Promise<boolean> {
    return async () =>
      ((await maybeRow<{ n: number }>(this.db, sql`SELECT claims AS n FROM work_items WHERE id = ${id}`))
        ?.n ?? 0) > claims;
  }

  /** Wire: true once the attempt's id was retired (the item re-handed out under a fresh one). */
  retired(id: string): () => Promise<boolean> {
    return async () => !(await maybeRow(this.db, sql`SELECT 1 AS ok FROM work_items WHERE id = ${id}`));
  }
}

/** A claim-lane outcome of `item` for the record. */
function claimOutcome(
  lane: Lane,
  worker: string,
  call: Outcome['call'],
  item: Pick<Item, 'id' | 'lease' | 'claims'>,
  accepted: boolean,
  stale: boolean,
  status: number,
): Outcome {
  return {
    lane,
    worker,
    call,
    workId: item.id,
    proof: item.lease,
    claims: item.claims,
    outcome: accepted ? 'accepted' : 'refused',
    status,
    stale,
  };
}

/** The in-process claimer: its own connection, random batches, complete one by one or all at once. */
export async function inProcessClaimer(run: Run, url: string, name: string): Promise<void> {
  const conn = connectPg(url, { max: 1 });
  const { db } = conn;
  const settle = async (call: 'extend' | 'complete', item: Item, stale: boolean) => {
    const proof = { ...item };
    try {
      if (call === 'extend') await extend(db, item, CLAIM_TTL_MS);
      else await complete(db, item);
      run.record(claimOutcome('claim', name, call, proof, true, stale, 204));
    } catch (err) {
      if (!(err instanceof LeaseLostError)) throw err;
      run.record(claimOutcome('claim', name, call, proof, false, stale, 409));
    }
  };
  // Stale holders write over this claimer's connection: it stays open until they have.
  const stale: Promise<void>[] = [];
  try {
    while (!run.done('claim')) {
      const k = 1 + Math.floor(Math.random() * 10);
      const items = await claimMany(db, pick(CLAIM_KINDS), k, CLAIM_TTL_MS);
      if (items.length > k) run.batchOverflows++;
      if (items.length === 0) {
        await sleep(20);
        continue;
      }
      const held: Item[] = [];
      for (const item of items) {
        if (!run.losesLease()) {
          held.push(item);
          continue;
        }
        await backdateLease(run.db, item, CLAIM_TTL_MS + 1_000);
        const writes = async () => {
          await settle('extend', item, true);
          await settle('complete', item, true);
        };
        stale.push(run.spawnStale(`${name} ${item.id}`, run.claimedAgain(item.id, item.claims), writes));
      }
      if (Math.random() < 0.5) {
        for (const item of held) await settle('complete', item, false);
      } else if (held.length > 0) {
        const { completed } = await completeMany(db, held);
        const done = new Set(completed);
        for (const item of held) {
          const ok = done.has(item.id);
          run.record(claimOutcome('claim', name, 'complete', item, ok, false, ok ? 204 : 409));
        }
      }
    }
  } finally {
    await Promise.all(stale);
    await conn.close();
  }
}

/** The platform lane over HTTP: claim one, complete it with its lease. */
export async function platformClaimer(run: Run, baseURL: string, key: string, name: string): Promise<void> {
  const post = (path: string, body: unknown) =>
    fetch(`${baseURL}/v1/platform/work${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const settle = async (call: 'extend' | 'complete', item: Item, stale: boolean) => {
    const body = call === 'extend' ? { lease: item.lease, ttl_seconds: 60 } : { lease: item.lease };
    const res = await post(`/${item.id}/${call}`, body);
    await res.body?.cancel();
    if (res.status !== 200 && res.status !== 204 && res.status !== 409) {
      throw new Error(`platform ${call} answered ${res.status}`);
    }
    run.record(claimOutcome('platform', name, call, item, res.status !== 409, stale, res.status));
  };
  while (!run.done('claim')) {
    const res = await post('/claim', { kind: pick(CLAIM_KINDS), ttl_seconds: CLAIM_TTL_MS / 1000 });
    if (res.status !== 200) throw new Error(`platform claim answered ${res.status}: ${await res.text()}`);
    const wire = (await res.json()) as { id: string; lease: string; claims: number } | null;
    if (!wire) {
      await sleep(20);
      continue;
    }
    const item = { id: wire.id, lease: wire.lease, claims: wire.claims } as Item;
    if (!run.losesLease()) {
      await settle('complete', item, false);
      continue;
    }
    await backdateLease(run.db, item, CLAIM_TTL_MS + 1_000);
    run.spawnStale(`${name} ${item.id}`, run.claimedAgain(item.id, item.claims), async () => {
      await settle('extend', item, true);
      await settle('complete', item, true);
    });
  }
}

export interface WireTarget {
  baseURL: string;
  environmentId: string;
  key: string;
}

type WorkResource = Anthropic['beta']['environments']['work'];

/** Records a wire call's outcome: accepted, refused (an HTTP error status) or ambiguous. */
async function wireCall(
  run: Run,
  name: string,
  call: Outcome['call'],
  workId: string,
  stale: boolean,
  send: () => Promise<unknown>,
): Promise<boolean> {
  let outcome: Outcome['outcome'] = 'accepted';
  let status: number | null = 200;
  try {
    await send();
  } catch (err) {
    const refused = err instanceof APIError && err.status !== undefined && err.status < 500;
    outcome = refused ? 'refused' : 'ambiguous';
    status = refused ? (err as APIError).status! : null;
  }
  run.record({ lane: 'wire', worker: name, call, workId, proof: null, claims: null, outcome, status, stale });
  return outcome === 'accepted';
}

/** A paused wire holder: its lease lapses, a poll hands the item on, then it beats and stops. */
function pauseWireHolder(
  run: Run,
  work: WorkResource,
  name: string,
  workId: string,
  environmentId: string,
  lastHeartbeat: string | null,
): Promise<void> {
  return lapseLease(run.db, workId).then(
    () =>
      void run.spawnStale(`${name} ${workId}`, run.retired(workId), async () => {
        const params = { environment_id: environmentId };
        if (lastHeartbeat) {
          await wireCall(run, name, 'heartbeat', workId, true, () =>
            work.heartbeat(workId, { ...params, expected_last_heartbeat: lastHeartbeat }),
          );
        }
        await wireCall(run, name, 'stop', workId, true, () => work.stop(workId, { ...params, force: true }));
      }),
  );
}

/**
 * A wire worker on the SDK's raw methods, as `EnvironmentWorker` drives them: poll, ack, first
 * heartbeat, a second one echoing the first, force stop. Now and then it also replays an old
 * echo (a lost heartbeat response), which must be a 412 that changes nothing.
 */
export async function rawWireWorker(run: Run, target: WireTarget, name: string): Promise<void> {
  const work = new Anthropic({ apiKey: target.key, baseURL: target.baseURL }).beta.environments.work;
  const params = { environment_id: target.environmentId };
  while (!run.done('wire')) {
    const item = await work.poll(target.environmentId, { block_ms: 999, 'Anthropic-Worker-ID': name });
    if (!item) continue;
    if (!(await wireCall(run, name, 'ack', item.id, false, () => work.ack(item.id, params)))) continue;
    const first = await work.heartbeat(item.id, {
      ...params,
      expected_last_heartbeat: 'NO_HEARTBEAT',
      desired_ttl_seconds: WIRE_TTL_SECONDS,
    });
    if (run.losesLease()) {
      await pauseWireHolder(run, work, name, item.id, target.environmentId, first.last_heartbeat);
      continue;
    }
    await work.heartbeat(item.id, {
      ...params,
      expected_last_heartbeat: first.last_heartbeat,
      desired_ttl_seconds: WIRE_TTL_SECONDS,
    });
    if (Math.random() < 0.05) {
      await wireCall(run, name, 'heartbeat', item.id, true, () =>
        work.heartbeat(item.id, { ...params, expected_last_heartbeat: first.last_heartbeat }),
      );
    }
    await wireCall(run, name, 'stop', item.id, false, () => work.stop(item.id, { ...params, force: true }));
  }
}

/**
 * A wire worker on the SDK's `WorkPoller` (it polls and acks), finishing each item the way the
 * poller's own auto-stop does — a graceful stop, which ends a `starting` item outright — but
 * itself, so the outcome can be recorded.
 */
export async function pollerWireWorker(run: Run, target: WireTarget, name: string): Promise<void> {
  const client = new Anthropic({ apiKey: 'unused-by-the-poller', baseURL: target.baseURL });
  const work = new Anthropic({ apiKey: target.key, baseURL: target.baseURL }).beta.environments.work;
  const stopPolling = new AbortController();
  const onAbort = () => stopPolling.abort();
  run.signal.addEventListener('abort', onAbort, { once: true });
  const poller = client.beta.environments.work.poller({
    environmentId: target.environmentId,
    environmentKey: target.key,
    workerId: name,
    autoStop: false,
    signal: stopPolling.signal,
  });
  // The poller sleeps 1–3 s after an empty poll; a check each second ends it when the lane is done.
  const watch = setInterval(() => run.done('wire') && stopPolling.abort(), 1_000);
  try {
    for await (const item of poller) {
      if (run.losesLease()) {
        await pauseWireHolder(run, work, name, item.id, target.environmentId, null);
      } else {
        await wireCall(run, name, 'stop', item.id, false, () =>
          work.stop(item.id, { environment_id: target.environmentId }),
        );
      }
      if (run.done('wire')) break;
    }
  } finally {
    clearInterval(watch);
    run.signal.removeEventListener('abort', onAbort);
  }
}
