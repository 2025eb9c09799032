/**
 * The replicas test's clients. Each spreads its calls over the fleet by its own round-robin
 * (`Fleet.rotation`), so one holder's consecutive calls — and a retry after a dead replica —
 * land on different replicas:
 *
 * - wire: the official SDK's `WorkPoller` (poll and ack, with the SDK's own retries), then
 *   heartbeats and a force stop through `client.beta.environments.work`;
 * - platform: the claim lane over HTTP — claim, sometimes extend, complete;
 * - enqueue: `POST /v1/platform/work`, one fresh session per item.
 *
 * A holder write whose connection was refused goes to the next replica (it reached no server).
 * One whose connection was reset goes again too, since its holder must learn where it stands;
 * if that retry is refused, the first attempt may be the one that landed: it is recorded as
 * ambiguous and settled from the database's history afterwards. A reset enqueue is not
 * retried (a retry could enqueue the unit twice if it was already done); whether it landed is
 * read from the table afterwards.
 *
 * With probability `lossRate` a holder has its lease taken away (moved into the past, as a long
 * pause would leave it). Once the item went to someone else, the stale holder sends its proof
 * to every replica — waiting for a dead one to come back — and each must refuse it.
 */
import Anthropic, { APIConnectionError, APIError } from '@anthropic-ai/sdk';
import type { BetaSelfHostedWork } from '@anthropic-ai/sdk/resources/beta/environments/work';
import type { Item, WorkKind } from '../../../src/queue/types.js';
import { backdateLease, lapseLease } from '../../helpers/factories.js';
import type { Outcome } from '../contention/audit.js';
import { type Fleet, ReplicaUnreachable } from './fleet.js';
import { PLATFORM_TTL_SECONDS, type Run, WIRE_TTL_SECONDS } from './run.js';

/** The claim lane's kinds the enqueuer uses (tool_exec goes to the self_hosted environment). */
export const PLATFORM_KINDS: readonly WorkKind[] = ['model_turn', 'web_exec', 'mcp_exec'];
/** No single call may take longer than this (a long poll blocks ≤ 1 s). */
const CALL_TIMEOUT_MS = 15_000;
const EXTEND_RATE = 0.3;
const SECOND_BEAT_RATE = 0.5;
/** How often a second heartbeat is followed by a replay of the echo it superseded, to every replica. */
const STALE_ECHO_RATE = 0.05;

type WorkResource = Anthropic['beta']['environments']['work'];

export interface Targets {
  /** The self_hosted environment whose tool_exec items the wire serves, and its key. */
  wire: { environmentId: string; key: string };
  /** The cloud environment whose items the claim lane serves. */
  platform: { environmentId: string };
  /** A platform API key. */
  platformKey: string;
}

interface Answer<T> {
  value?: T;
  status: number;
  /** When the attempt that was answered was sent. */
  sentAt: number;
  /** An earlier attempt of this write was cut off after it may have reached a server. */
  afterReset: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)]!;

/** The fleet's connection failure behind an error, unless it was an abort (a timeout or the end). */
function unreachable(err: unknown): ReplicaUnreachable | null {
  const down =
    err instanceof ReplicaUnreachable
      ? err
      : err instanceof APIConnectionError && err.cause instanceof ReplicaUnreachable
        ? err.cause
        : null;
  return down && down.failure !== 'aborted' ? down : null;
}

/**
 * Sends until some replica answers. `send` picks the replica itself: the next one of a
 * rotation, or always the same one (a stale write that must reach that replica).
 */
async function answered<T>(run: Run, send: () => Promise<T>, status: (v: T) => number): Promise<Answer<T>> {
  let afterReset = false;
  for (;;) {
    if (run.signal.aborted) throw new Error('the run deadline passed while a write was unanswered');
    const sentAt = performance.now();
    try {
      const value = await send();
      return { value, status: status(value), sentAt, afterReset };
    } catch (err) {
      const down = unreachable(err);
      if (down) {
        afterReset ||= down.failure === 'reset';
        await sleep(50);
        continue;
      }
      if (err instanceof APIError && err.status !== undefined && err.status < 500) {
        return { status: err.status, sentAt, afterReset };
      }
      throw err;
    }
  }
}

const sdk = <T>(run: Run, send: () => Promise<T>) => answered(run, send, () => 200);
const http = (run: Run, send: () => Promise<Response>) => answered(run, send, (res) => res.status);

function outcome(
  lane: Outcome['lane'],
  worker: string,
  call: Outcome['call'],
  workId: string,
  answer: { status: number },
  stale: boolean,
  proof: { lease: string; claims: number } | null = null,
): Outcome {
  const ok = answer.status >= 200 && answer.status < 300;
  return {
    lane,
    worker,
    call,
    workId,
    proof: proof?.lease ?? null,
    claims: proof?.claims ?? null,
    outcome: ok ? 'accepted' : 'refused',
    status: answer.status,
    stale,
  };
}

/** Runs `write(replica)` on every replica in turn (a stale holder's proof, sent to each). */
async function onEveryReplica(fleet: Fleet, write: (replica: number) => Promise<void>): Promise<void> {
  for (let replica = 0; replica < fleet.size; replica++) await write(replica);
}

function sdkWork(fleet: Fleet, key: string, next: () => number, maxRetries = 0): WorkResource {
  return new Anthropic({
    apiKey: key,
    baseURL: fleet.url(0),
    fetch: fleet.fetchVia(next),
    maxRetries,
    timeout: CALL_TIMEOUT_MS,
    logLevel: 'off',
  }).beta.environments.work;
}

/** A wire worker: the SDK's WorkPoller polls and acks; this holder heartbeats and force-stops. */
export async function wireWorker(run: Run, fleet: Fleet, targets: Targets, name: string, offset: number) {
  const { environmentId, key } = targets.wire;
  // The poller's client keeps the SDK's own retries: a dead replica's poll or ack goes to the next.
  const client = new Anthropic({
    apiKey: 'unused-by-the-poller',
    baseURL: fleet.url(0),
    fetch: fleet.fetchVia(fleet.rotation(offset)),
    timeout: CALL_TIMEOUT_MS,
    logLevel: 'off',
  });
  const work = sdkWork(fleet, key, fleet.rotation(offset + 1));
  const each = Array.from({ length: fleet.size }, (_, r) => sdkWork(fleet, key, () => r));
  const stopPolling = new AbortController();
  const watch = setInterval(() => (run.done || run.signal.aborted) && stopPolling.abort(), 100);
  try {
    const poller = client.beta.environments.work.poller({
      environmentId,
      environmentKey: key,
      workerId: name,
      autoStop: false,
      signal: stopPolling.signal,
    });
    for await (const item of poller) {
      await holdWireItem(run, fleet, work, each, environmentId, name, item);
      if (run.done) break;
    }
  } finally {
    clearInterval(watch);
  }
}

async function holdWireItem(
  run: Run,
  fleet: Fleet,
  work: WorkResource,
  each: WorkResource[],
  environmentId: string,
  name: string,
  item: BetaSelfHostedWork,
): Promise<void> {
  const unit = item.data.id;
  const holder = `${name} ${item.id}`;
  const params = { environment_id: environmentId };
  const ackedAt = fleet.firstAckAt.get(item.id);
  if (ackedAt === undefined) throw new Error(`${holder}: the poller yielded an item it never acked`);
  run.acquire(unit, holder, ackedAt, WIRE_TTL_SECONDS);
  const beat = (via: WorkResource, expected: string) =>
    via.heartbeat(item.id, {
      ...params,
      expected_last_heartbeat: expected,
      desired_ttl_seconds: WIRE_TTL_SECONDS,
    });

  const first = await sdk(run, () => beat(work, 'NO_HEARTBEAT'));
  run.record(outcome('wire', name, 'heartbeat', item.id, first, false), first.afterReset);
  const echo = first.value?.last_heartbeat ?? null;
  if (echo) run.renew(unit, holder, first.sentAt, WIRE_TTL_SECONDS);

  if (echo && run.losesLease('wire')) {
    run.release(unit, holder);
    await lapseLease(run.db, item.id);
    const stale = echo;
    run.spawnStale(holder, run.retired(item.id), () =>
      onEveryReplica(fleet, async (replica) => {
        const hb = await sdk(run, () => beat(each[replica]!, stale));
        const stop = await sdk(run, () => each[replica]!.stop(item.id, { ...params, force: true }));
        for (const [call, answer] of [['heartbeat', hb] as const, ['stop', stop] as const]) {
          run.record(outcome('wire', name, call, item.id, answer, true), false);
          run.staleAnswers.push({
            lane: 'wire',
            call,
            replica,
            status: answer.status,
            at: performance.now(),
          });
        }
      }),
    );
    return;
  }

  if (echo && Math.random() < SECOND_BEAT_RATE) {
    const second = await sdk(run, () => beat(work, echo));
    run.record(outcome('wire', name, 'heartbeat', item.id, second, false), second.afterReset);
    if (second.value) {
      run.renew(unit, holder, second.sentAt, WIRE_TTL_SECONDS);
      const superseded = echo;
      // A lost heartbeat answer replayed: its echo was superseded, so every replica answers 412.
      if (Math.random() < STALE_ECHO_RATE) {
        run.staleEchoes++;
        run.spawnStale(
          `${holder} echo`,
          async () => true,
          () =>
            onEveryReplica(fleet, async (replica) => {
              const replay = await sdk(run, () => beat(each[replica]!, superseded));
              run.record(outcome('wire', name, 'heartbeat', item.id, replay, true), false);
              run.staleAnswers.push({
                lane: 'wire',
                call: 'echo',
                replica,
                status: replay.status,
                at: performance.now(),
              });
            }),
        );
      }
    }
  }

  const stop = await sdk(run, () => work.stop(item.id, { ...params, force: true }));
  run.record(outcome('wire', name, 'stop', item.id, stop, false), stop.afterReset);
  run.release(unit, holder);
}

interface PlatformItem {
  id: string;
  session_id: string;
  lease: string;
  claims: number;
}

/** A platform-lane claimer over HTTP: claim, sometimes extend, complete — each call on the next replica. */
export async function platformClaimer(
  run: Run,
  fleet: Fleet,
  targets: Targets,
  name: string,
  offset: number,
) {
  const next = fleet.rotation(offset);
  const post = (replica: number, path: string, body: unknown) =>
    fleet.send(replica, `/v1/platform/work${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${targets.platformKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
    });
  while (!run.done && !run.signal.aborted) {
    const sentAt = performance.now();
    let res: Response;
    try {
      res = await post(next(), '/claim', { kind: pick(PLATFORM_KINDS), ttl_seconds: PLATFORM_TTL_SECONDS });
    } catch (err) {
      const down = unreachable(err);
      if (!down) throw err;
      // A cut claim may have leased an item nobody will hear of: it waits out that lease.
      if (down.failure === 'reset') run.lostClaims++;
      continue;
    }
    if (res.status !== 200) throw new Error(`${name}: claim answered ${res.status}: ${await res.text()}`);
    const item = (await res.json()) as PlatformItem | null;
    if (!item) {
      await sleep(20);
      continue;
    }
    const unit = item.session_id;
    const holder = `${name} ${item.id}#${item.claims}`;
    run.acquire(unit, holder, sentAt, PLATFORM_TTL_SECONDS);
    const proof = { lease: item.lease, claims: item.claims };

    if (run.losesLease('platform')) {
      run.release(unit, holder);
      const held = { id: item.id, lease: item.lease, claims: item.claims } as Item;
      await backdateLease(run.db, held, (PLATFORM_TTL_SECONDS + 1) * 1000);
      const stale = { lease: held.lease, claims: item.claims };
      run.spawnStale(holder, run.claimedAgain(item.id, item.claims), () =>
        onEveryReplica(fleet, async (replica) => {
          for (const call of ['extend', 'complete'] as const) {
            const body = call === 'extend' ? { lease: stale.lease, ttl_seconds: 60 } : { lease: stale.lease };
            const answer = await http(run, () => post(replica, `/${item.id}/${call}`, body));
            run.record(outcome('platform', name, call, item.id, answer, true, stale), false);
            run.staleAnswers.push({
              lane: 'platform',
              call,
              replica,
              status: answer.status,
              at: performance.now(),
            });
          }
        }),
      );
      continue;
    }

    if (Math.random() < EXTEND_RATE) {
      const body = { lease: proof.lease, ttl_seconds: PLATFORM_TTL_SECONDS };
      const extended = await http(run, () => post(next(), `/${item.id}/extend`, body));
      run.record(outcome('platform', name, 'extend', item.id, extended, false, proof), extended.afterReset);
      if (extended.status !== 200) {
        // The proof is gone (an extend that landed unanswered replaced it): the item waits out its lease.
        run.release(unit, holder);
        continue;
      }
      proof.lease = ((await extended.value!.json()) as { lease: string }).lease;
      run.renew(unit, holder, extended.sentAt, PLATFORM_TTL_SECONDS);
    }
    const done = await http(run, () => post(next(), `/${item.id}/complete`, { lease: proof.lease }));
    run.record(outcome('platform', name, 'complete', item.id, done, false, proof), done.afterReset);
    run.release(unit, holder);
  }
}

/** Enqueues over HTTP, half tool_exec for the wire and half claim-lane kinds, while the run allows. */
export async function enqueuer(run: Run, fleet: Fleet, targets: Targets, name: string, offset: number) {
  const next = fleet.rotation(offset);
  for (let i = 0; await run.enqueueSlot(); i++) {
    const wire = i % 2 === 0;
    const unit = { sessionId: `sesn_${name}_${i}`, kind: wire ? 'tool_exec' : pick(PLATFORM_KINDS) };
    const body = {
      environment_id: wire ? targets.wire.environmentId : targets.platform.environmentId,
      session_id: unit.sessionId,
      kind: unit.kind,
    };
    run.enqueuesInFlight++;
    try {
      for (;;) {
        let res: Response;
        try {
          res = await fleet.send(next(), '/v1/platform/work', {
            method: 'POST',
            headers: { authorization: `Bearer ${targets.platformKey}`, 'content-type': 'application/json' },
            body: JSON.stringify(body),
            signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
          });
        } catch (err) {
          const down = unreachable(err);
          if (!down) throw err;
          if (down.failure === 'refused') continue;
          run.ambiguousEnqueues.push(unit);
          break;
        }
        if (res.status !== 201)
          throw new Error(`${name}: enqueue answered ${res.status}: ${await res.text()}`);
        run.units.push(unit);
        break;
      }
    } finally {
      run.enqueuesInFlight--;
    }
  }
}
