/**
 * One route's fuzz run: fast-check draws requests (valid ones from the route's schemas and
 * mutated ones), sends each through a target (the in-process app or the real server over
 * loopback), one at a time, and holds every answer to the contract (`answer-check.ts`) and
 * every refused request to writing nothing (`db-audit.ts`). The tally says what was sent
 * and what came back, for the fault summary.
 */
import fc from 'fast-check';
import { MAX_CLAIM_BLOCK_MS } from '../../../src/api/routes/platform-claim-wait.js';
import { MAX_BLOCK_MS } from '../../../src/api/routes/work-poll.js';
import type { Database } from '../../../src/db/handle.js';
import { type Answer, problemsWith } from './answer-check.js';
import { digest, lastWrite, writesSince } from './db-audit.js';
import { bodyMutators, type Mutation } from './mutate-body.js';
import { requestMutators } from './mutate-request.js';
import { type FuzzRequest, toWire, type WireRequest } from './request.js';
import { answeringRoute, type RouteModel, routeModels, validRequest } from './routes.js';
import type { World } from './world.js';

/** A digest of every table is compared around one request in this many. */
const DIGEST_EVERY = 25;
/** The slowest answer allowed (docs/guarantees.md), a long poll's own wait aside. */
export const MAX_ANSWER_MS = 2_000;

const ALL_ROUTES = routeModels();

export interface Target {
  send(wire: WireRequest): Promise<Answer>;
}

export interface Tally {
  requests: number;
  mutated: number;
  statuses: Map<number, number>;
  classes: Map<string, number>;
  refused: number;
  /** Refused requests checked for writes (all of them, but for windows a target calls noisy). */
  audited: number;
  digests: number;
  maxMs: number;
  /** The last few requests, for a failure's message: state carries over between requests. */
  recent: string[];
}

export function newTally(): Tally {
  return {
    requests: 0,
    mutated: 0,
    statuses: new Map(),
    classes: new Map(),
    refused: 0,
    audited: 0,
    digests: 0,
    maxMs: 0,
    recent: [],
  };
}

const bump = <K>(m: Map<K, number>, k: K) => m.set(k, (m.get(k) ?? 0) + 1);

/** The share of a route's requests drawn mutated (the rest are valid). */
export const MUTATED_SHARE = 0.45;

/** Valid requests, and mutated ones (1–3 mutators each) about `MUTATED_SHARE` of the time. */
export function requestsFor(
  route: RouteModel,
  extra: fc.Arbitrary<Mutation>[] = [],
): fc.Arbitrary<FuzzRequest> {
  const valid = validRequest(route);
  const mutators = fc.oneof(...bodyMutators, ...requestMutators, ...extra);
  const mutated = fc
    .tuple(valid, fc.array(mutators, { minLength: 1, maxLength: 3 }))
    .map(([req, ms]) =>
      ms.reduce((r, m) => ({ ...m.apply(r, route), mutations: [...r.mutations, m.cls] }), req),
    );
  const percent = Math.round(MUTATED_SHARE * 100);
  return fc.oneof({ weight: 100 - percent, arbitrary: valid }, { weight: percent, arbitrary: mutated });
}

function describe(req: FuzzRequest, wire: WireRequest): string {
  const size = wire.body instanceof Uint8Array ? wire.body.length : (wire.body?.size ?? 0);
  const text =
    wire.body instanceof Uint8Array && size < 300 ? Buffer.from(wire.body).toString('utf8') : `${size} bytes`;
  return `${wire.method} ${wire.target.slice(0, 300)} [${req.mutations.join(', ') || 'valid'}] body: ${text}`;
}

export interface RunOptions {
  route: RouteModel;
  world: World;
  db: Database;
  target: Target;
  runs: number;
  seed: number;
  tally?: Tally;
  extra?: fc.Arbitrary<Mutation>[];
}

/**
 * How long the request may rightly wait for work: a wire poll's `block_ms` (query, clamped to
 * `MAX_BLOCK_MS`) or a platform claim's (JSON body, up to `MAX_CLAIM_BLOCK_MS`), whichever it carries.
 */
function grantedWaitMs(wire: WireRequest): number {
  const polled = Math.min(Number(wire.target.match(/block_ms=(\d+)/)?.[1] ?? 0), MAX_BLOCK_MS);
  const claimed = (bodyJson(wire) as { block_ms?: unknown } | null)?.block_ms;
  const valid =
    typeof claimed === 'number' && Number.isInteger(claimed) && claimed >= 1 && claimed <= MAX_CLAIM_BLOCK_MS;
  return Math.max(polled, valid ? claimed : 0);
}

/** The body as the server parses it, when it is JSON of a size a claim's body can have. */
function bodyJson(wire: WireRequest): unknown {
  const { body } = wire;
  if (body === null || (!(body instanceof Uint8Array) && body.size > 65_536)) return null;
  const bytes = body instanceof Uint8Array ? [body] : [...body.chunks()];
  try {
    return JSON.parse(Buffer.concat(bytes).toString('utf8'));
  } catch {
    return null;
  }
}

export async function fuzzRoute(o: RunOptions): Promise<Tally> {
  const tally = o.tally ?? newTally();
  let last = await lastWrite(o.db);
  const recent = tally.recent;
  const property = fc.asyncProperty(requestsFor(o.route, o.extra), async (req) => {
    const wire = toWire(req, o.world);
    const before = tally.requests % DIGEST_EVERY === 0 ? await digest(o.db) : null;
    const answer = await o.target.send(wire);
    const written = await lastWrite(o.db);
    const path = wire.target.split('?')[0]!;
    const answering = answeringRoute(ALL_ROUTES, wire.method, path);
    const problems = problemsWith(answering, answer, o.world.secrets, wire.method);
    if (answer.ms > MAX_ANSWER_MS + grantedWaitMs(wire))
      problems.push(`answered in ${Math.round(answer.ms)} ms`);
    tally.requests++;
    if (req.mutations.length) tally.mutated++;
    for (const cls of new Set(req.mutations)) bump(tally.classes, cls);
    bump(tally.statuses, answer.status);
    tally.maxMs = Math.max(tally.maxMs, answer.ms);
    if (answer.status >= 400) {
      tally.refused++;
      tally.audited++;
      if (written !== last) problems.push(`refused request wrote: ${await writesSince(o.db, last)}`);
      if (before !== null) {
        tally.digests++;
        if ((await digest(o.db)) !== before) problems.push('refused request changed the database digest');
      }
    }
    last = written;
    if (answer.status < 300 && !problems.length && answer.text) {
      o.world.learn(o.route.key, wire.params, answer.status, JSON.parse(answer.text));
    }
    if (problems.length) {
      throw new Error(
        `${describe(req, wire)}\n→ ${answer.status} ${answer.text.slice(0, 400)}\n${problems.join('; ')}\nafter:\n${recent.join('\n')}`,
      );
    }
    recent.push(`${describe(req, wire).slice(0, 300)} → ${answer.status}`);
    if (recent.length > 3) recent.shift();
  });
  await fc.assert(property, { seed: o.seed, numRuns: o.runs, endOnFailure: true });
  return tally;
}

/** "200×412, 400×1,203, …" */
export function statusLine(t: Tally): string {
  return [...t.statuses.entries()]
    .sort(([a], [b]) => a - b)
    .map(([s, n]) => `${s}×${n.toLocaleString('en-US')}`)
    .join(', ');
}
