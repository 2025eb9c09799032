/**
 * The HTTP floor for the wire cycle: the four work endpoints a worker's cycle uses (poll, ack,
 * heartbeat, stop under /v1/environments/{id}/work/...), on bare `node:http` and a `pg.Pool`
 * of Leasehold's size (10), answering the shapes the cycle's client reads, against
 * Leasehold's own tables. The same for the platform lane's claimers (claim, complete and
 * complete_and_claim under /v1/platform/work/...), with a platform key checked against
 * `api_keys` in the statement, as `environment_keys` is for the worker's.
 *
 * Each request is ONE named prepared statement that checks the Bearer key (SHA-256 hex, as
 * src/auth/secrets.ts stores it) by joining `environment_keys` and does that endpoint's
 * queue work: poll records the worker and finalizes abandoned wind-downs in the same
 * statement, as Leasehold's poll does across its statements. Only failure answers (404, 409,
 * 412) run a second statement to say which failure it was; the cycle never takes them. No
 * framework, no telemetry, no request ids: what is left is the floor for authenticated work
 * over HTTP.
 *
 * Run: `DATABASE_URL=… PORT=… [FLOOR_POOL_SIZE=…] tsx bench/anchors/floor-server.ts` (PORT=0 picks a free port);
 * it prints `floor listening on http://127.0.0.1:<port>` when it accepts requests, and ends
 * on SIGTERM.
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer, type HttpBindings } from '@hono/node-server';
import { type Context, Hono } from 'hono';
import pg from 'pg';

/** Leasehold's default pool size (src/config.ts), unless `FLOOR_POOL_SIZE` sets another. */
const POOL_SIZE = Number(process.env.FLOOR_POOL_SIZE ?? 10);
/** Leasehold's defaults and caps (src/api/routes/work-poll.ts, work-heartbeat.ts, queue/ack.ts, poll.ts). */
const DEFAULT_RECLAIM_MS = 5_000;
const MAX_RECLAIM_MS = 600_000;
const DEFAULT_TTL_SECONDS = 30;
const MAX_TTL_SECONDS = 300;
const NO_HEARTBEAT = 'NO_HEARTBEAT';

/** RFC 3339 UTC, microseconds, trailing zeros trimmed — src/db/time.ts `ts()`. */
const ts = (column: string) =>
  `(rtrim(rtrim(to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z')`;

const WORK_COLUMNS = `w.id, w.environment_id, w.session_id, w.state, w.metadata,
  ${ts('w.created_at')} AS created_at, ${ts('w.acknowledged_at')} AS acknowledged_at,
  ${ts('w.started_at')} AS started_at, ${ts('w.last_heartbeat')} AS last_heartbeat,
  ${ts('w.stop_requested_at')} AS stop_requested_at, ${ts('w.stopped_at')} AS stopped_at`;

/** The caller's key: $1 environment id, $2 key hash. At most one row (key_hash is unique). */
const KEY = `k AS (
  SELECT 1 AS ok FROM environment_keys
   WHERE key_hash = $2 AND environment_id = $1
     AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()))`;
const AUTHED = 'EXISTS (SELECT 1 FROM k)';
/** The wire scope (src/queue/sql.ts `wireScope`): $1 environment id, $3 work id. */
const SCOPE = `w.id = $3 AND w.environment_id = $1 AND w.lane = 'poll'`;

/** A platform (or admin) API key: $1 its hash. */
const PLATFORM_KEY = `k AS (
  SELECT 1 AS ok FROM api_keys
   WHERE key_hash = $1 AND scope IN ('platform', 'admin')
     AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()))`;
/**
 * The oldest available claim-lane item of the kind in parameter `kind` as `picked`, locked:
 * the older of the first free queued item and the first lapsed lease, each found through its
 * own partial index (src/queue/sql.ts `pickClaimable`). `also` narrows both scans.
 */
const pickClaimable = (kind: string, also = '') => `queued AS (
      SELECT id, state, created_at FROM work_items
       WHERE lane = 'claim' AND kind = ${kind} AND state = 'queued' ${also}
       ORDER BY created_at LIMIT 1
       FOR UPDATE SKIP LOCKED),
    lapsed AS (
      SELECT id, state, created_at FROM work_items
       WHERE lane = 'claim' AND kind = ${kind} AND state = 'active' AND lease_expires_at < now() ${also}
       ORDER BY created_at LIMIT 1
       FOR UPDATE SKIP LOCKED),
    picked AS (
      SELECT id, state FROM (SELECT * FROM queued UNION ALL SELECT * FROM lapsed) c
       ORDER BY created_at LIMIT 1)`;
/** The hand-out of `picked` for the seconds in parameter `ttl`, answering the platform item's columns. */
const claimed = (ttl: string) => `claimed AS (
      UPDATE work_items w
         SET state = 'active', lease_expires_at = now() + ${ttl}::double precision * interval '1 second',
             updated_at = now(), claims = w.claims + 1
        FROM picked
       WHERE w.id = picked.id
      RETURNING w.id, w.environment_id, w.session_id, w.kind, ${ts('w.lease_expires_at')} AS lease,
                picked.state = 'active' AS reclaimed, w.claims, w.metadata, w.trace_context)`;
/** Completes item $2 under its proof $3, for a key that opens the lane. */
const DONE = `done AS (
      UPDATE work_items
         SET state = 'stopped', lease_expires_at = NULL, updated_at = now(), stopped_at = now()
       WHERE id = $2 AND state = 'active' AND lease_expires_at = $3::timestamptz AND ${AUTHED}
      RETURNING id)`;

/**
 * Every statement ends in `FROM k LEFT JOIN <result>`: no row → the key is not this
 * environment's (401); a row of nulls → authenticated, nothing matched.
 */
const STATEMENTS = {
  // $3 worker id ('' when not sent), $4 reclaim ms, $5 the id a re-handed-out item gets.
  poll: `WITH ${KEY},
    reaped AS (
      DELETE FROM worker_polls
       WHERE $3 <> '' AND ${AUTHED} AND environment_id = $1 AND worker_id <> $3
         AND last_polled_at < now() - interval '30 seconds'),
    recorded AS (
      INSERT INTO worker_polls (environment_id, worker_id, last_polled_at)
      SELECT $1, $3, now() FROM k WHERE $3 <> ''
      ON CONFLICT (environment_id, worker_id) DO UPDATE SET last_polled_at = now()),
    finalized AS (
      UPDATE work_items SET state = 'stopped', stopped_at = now(), lease_expires_at = NULL, updated_at = now()
       WHERE id IN (
         SELECT id FROM work_items
          WHERE environment_id = $1 AND state = 'stopping' AND lane = 'poll'
            AND (lease_expires_at IS NULL OR lease_expires_at < now()) AND ${AUTHED}
          LIMIT 50
          FOR UPDATE SKIP LOCKED)),
    queued AS (
      SELECT id, created_at, lease_expires_at IS NULL AS first FROM work_items
       WHERE environment_id = $1 AND lane = 'poll' AND state = 'queued'
         AND (lease_expires_at IS NULL
              OR lease_expires_at < now() + (5000 - $4::double precision) * interval '1 millisecond')
         AND ${AUTHED}
       ORDER BY created_at
       LIMIT 1
       FOR UPDATE SKIP LOCKED),
    lapsed AS (
      SELECT id, created_at, false AS first FROM work_items
       WHERE environment_id = $1 AND lane = 'poll' AND state IN ('starting', 'active')
         AND lease_expires_at < now() AND ${AUTHED}
       ORDER BY created_at
       LIMIT 1
       FOR UPDATE SKIP LOCKED),
    picked AS (
      SELECT id, first FROM (SELECT * FROM queued UNION ALL SELECT * FROM lapsed) c
       ORDER BY created_at
       LIMIT 1),
    handed AS (
      UPDATE work_items w
         SET id = CASE WHEN picked.first THEN w.id ELSE $5 END,
             state = 'queued', last_heartbeat = NULL, acknowledged_at = NULL, started_at = NULL,
             lease_expires_at = now() + interval '5 seconds',
             updated_at = now(), claims = w.claims + 1
        FROM picked
       WHERE w.id = picked.id
      RETURNING ${WORK_COLUMNS}, w.trace_context)
    SELECT handed.* FROM k LEFT JOIN handed ON true`,
  ack: `WITH ${KEY},
    acked AS (
      UPDATE work_items w
         SET state = CASE WHEN w.state = 'queued' THEN 'starting' ELSE w.state END,
             acknowledged_at = CASE WHEN w.state = 'queued' THEN now() ELSE w.acknowledged_at END,
             lease_expires_at = CASE WHEN w.state = 'queued' THEN now() + interval '30 seconds'
                                     ELSE w.lease_expires_at END,
             updated_at = now()
       WHERE ${SCOPE} AND ${AUTHED}
      RETURNING ${WORK_COLUMNS})
    SELECT acked.* FROM k LEFT JOIN acked ON true`,
  // $4 ttl seconds.
  claimLease: `WITH ${KEY},
    beat AS (
      UPDATE work_items w
         SET state = 'active', last_heartbeat = now(), started_at = now(),
             lease_expires_at = now() + $4::double precision * interval '1 second', updated_at = now()
       WHERE ${SCOPE} AND w.state = 'starting' AND w.last_heartbeat IS NULL AND ${AUTHED}
      RETURNING ${ts('w.last_heartbeat')} AS last_heartbeat, w.state)
    SELECT beat.* FROM k LEFT JOIN beat ON true`,
  // $4 ttl seconds, $5 the echoed last_heartbeat.
  extendLease: `WITH ${KEY},
    beat AS (
      UPDATE work_items w
         SET last_heartbeat = CASE WHEN w.state = 'active'
                                   THEN greatest(now(), w.last_heartbeat + interval '1 microsecond')
                                   ELSE w.last_heartbeat END,
             lease_expires_at = CASE WHEN w.state = 'active'
                                     THEN now() + $4::double precision * interval '1 second'
                                     ELSE w.lease_expires_at END,
             updated_at = now()
       WHERE ${SCOPE} AND w.last_heartbeat = $5::timestamptz AND ${AUTHED}
      RETURNING ${ts('w.last_heartbeat')} AS last_heartbeat, w.state)
    SELECT beat.* FROM k LEFT JOIN beat ON true`,
  forceStop: `WITH ${KEY},
    stopped AS (
      UPDATE work_items w
         SET state = 'stopped', stop_requested_at = coalesce(w.stop_requested_at, now()),
             stopped_at = now(), lease_expires_at = NULL, updated_at = now()
       WHERE ${SCOPE} AND w.state <> 'stopped' AND ${AUTHED}
      RETURNING ${WORK_COLUMNS})
    SELECT stopped.* FROM k LEFT JOIN stopped ON true`,
  gracefulStop: `WITH ${KEY},
    stopped AS (
      UPDATE work_items w
         SET state = CASE WHEN w.state = 'active' THEN 'stopping' ELSE 'stopped' END,
             stop_requested_at = coalesce(w.stop_requested_at, now()),
             stopped_at = CASE WHEN w.state = 'active' THEN w.stopped_at ELSE now() END,
             lease_expires_at = CASE WHEN w.state = 'active' THEN w.lease_expires_at END,
             updated_at = now()
       WHERE ${SCOPE} AND w.state IN ('queued', 'starting', 'active') AND ${AUTHED}
      RETURNING ${WORK_COLUMNS})
    SELECT stopped.* FROM k LEFT JOIN stopped ON true`,
  // The platform lane: $1 the API key's hash. One statement each, as Leasehold's queue runs
  // them (src/queue/claim.ts, complete.ts, complete-and-claim.ts), behind the key's check.
  // $2 kind, $3 ttl seconds.
  platformClaim: `WITH ${PLATFORM_KEY},
    ${pickClaimable('$2', `AND ${AUTHED}`)},
    ${claimed('$3')}
    SELECT claimed.* FROM k LEFT JOIN claimed ON true`,
  // $2 work id, $3 lease. `completed` is null when the key does not open the lane.
  platformComplete: `WITH ${PLATFORM_KEY},
    ${DONE}
    SELECT EXISTS (SELECT 1 FROM done) AS completed FROM k`,
  // $2 work id, $3 lease, $4 kind, $5 ttl seconds: completes, then claims only if it did.
  platformCompleteAndClaim: `WITH ${PLATFORM_KEY},
    ${DONE},
    settled AS (SELECT EXISTS (SELECT 1 FROM done) AS completed),
    ${pickClaimable('$4', 'AND id <> $2 AND (SELECT completed FROM settled)')},
    ${claimed('$5')}
    SELECT settled.completed, claimed.* FROM k CROSS JOIN settled LEFT JOIN claimed ON true`,
  // Failure answers only: which failure it was. $1 environment id, $2 work id.
  current: `SELECT ${ts('w.last_heartbeat')} AS last_heartbeat, w.state FROM work_items w
             WHERE w.id = $2 AND w.environment_id = $1 AND w.lane = 'poll'`,
} as const;

type StatementName = keyof typeof STATEMENTS;

interface WorkRow {
  id: string | null;
  environment_id: string;
  session_id: string;
  state: string;
  metadata: Record<string, string>;
  created_at: string;
  acknowledged_at: string | null;
  started_at: string | null;
  last_heartbeat: string | null;
  stop_requested_at: string | null;
  stopped_at: string | null;
  trace_context?: { traceparent?: string; tracestate?: string } | null;
}

/** A platform claim's row: all null when nothing was available. */
interface PlatformItemRow {
  id: string | null;
  environment_id: string;
  session_id: string;
  kind: string;
  lease: string;
  reclaimed: boolean;
  claims: number;
  metadata: Record<string, string>;
  trace_context: { traceparent: string; tracestate?: string } | null;
}

interface BeatRow {
  last_heartbeat: string | null;
  state: string | null;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly details?: Record<string, unknown>,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

const unauthorized = () => new HttpError(401, 'authentication_error', 'invalid credentials');
const notFound = () => new HttpError(404, 'not_found_error', 'work item not found');

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: POOL_SIZE });
pool.on('error', () => {});

async function run<T>(name: StatementName, values: unknown[]): Promise<T[]> {
  const result = await pool.query({ name, text: STATEMENTS[name], values });
  return result.rows as T[];
}

/** The one row of a `FROM k LEFT JOIN …` statement; no row → the key does not open this environment. */
async function authed<T>(name: StatementName, values: unknown[]): Promise<T> {
  const rows = await run<T>(name, values);
  if (rows.length === 0) throw unauthorized();
  return rows[0]!;
}

/** Postgres refused a value as a timestamp (22007 invalid format, 22008 out of range). */
function unreadableTimestamp(err: unknown): boolean {
  return /^2200[78]$/.test((err as { code?: string }).code ?? '');
}

function keyHash(req: http.IncomingMessage): string {
  const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
  const secret = m?.[1]?.trim();
  if (!secret) throw new HttpError(401, 'authentication_error', 'missing credentials');
  return createHash('sha256').update(secret).digest('hex');
}

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
/** A Leasehold-shaped work id (src/ids.ts) for an item handed out again. */
function freshWorkId(): string {
  const bytes = randomBytes(15);
  let out = 'work_';
  for (let g = 0; g < 15; g += 5) {
    let acc = 0;
    for (let i = 0; i < 5; i++) acc = acc * 256 + bytes[g + i]!;
    for (let c = 7; c >= 0; c--) out += ALPHABET[Math.floor(acc / 2 ** (5 * c)) % 32];
  }
  return out;
}

/** An integer within (0, max], or `fallback` — src/api/routes/work-scope.ts `lenientInt`. */
function lenientInt(value: string | null, fallback: number, max: number): number {
  if (value === null || !/^-?\d{1,400}$/.test(value)) return fallback;
  const n = Number(value);
  return n <= 0 ? fallback : Math.min(n, max);
}

function toWire(w: WorkRow) {
  return {
    type: 'work',
    id: w.id,
    environment_id: w.environment_id,
    created_at: w.created_at,
    data: { type: 'session', id: w.session_id },
    state: w.state,
    metadata: w.metadata,
    acknowledged_at: w.acknowledged_at,
    latest_heartbeat_at: w.last_heartbeat,
    started_at: w.started_at,
    stop_requested_at: w.stop_requested_at,
    stopped_at: w.stopped_at,
    secret: null,
  };
}

/** Where a handler's one JSON answer goes: node:http's response, or a Response for Hono. */
interface Sink {
  json(status: number, body: unknown, headers?: Record<string, string>): void;
  /** An answer with no body (204). */
  empty(status: number): void;
}

function nodeSink(res: http.ServerResponse): Sink {
  return {
    json(status, body, headers = {}) {
      const text = `${JSON.stringify(body)}\n`;
      res.writeHead(status, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(text),
        ...headers,
      });
      res.end(text);
    },
    empty(status) {
      res.writeHead(status);
      res.end();
    },
  };
}

function sendJson(res: Sink, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.json(status, body, headers);
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      text += chunk;
    });
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}

async function poll(req: http.IncomingMessage, res: Sink, env: string, query: URLSearchParams) {
  const hash = keyHash(req);
  const workerId = (req.headers['anthropic-worker-id'] as string | undefined)?.trim() ?? '';
  const reclaimMs = lenientInt(query.get('reclaim_older_than_ms'), DEFAULT_RECLAIM_MS, MAX_RECLAIM_MS);
  const row = await authed<WorkRow>('poll', [env, hash, workerId, reclaimMs, freshWorkId()]);
  if (row.id === null) return sendJson(res, 200, null);
  const headers: Record<string, string> = {};
  if (row.trace_context?.traceparent) headers.traceparent = row.trace_context.traceparent;
  if (row.trace_context?.tracestate) headers.tracestate = row.trace_context.tracestate;
  sendJson(res, 200, toWire(row), headers);
}

async function ack(req: http.IncomingMessage, res: Sink, env: string, id: string) {
  const row = await authed<WorkRow>('ack', [env, keyHash(req), id]);
  if (row.id === null) throw notFound();
  sendJson(res, 200, toWire(row));
}

async function heartbeat(
  req: http.IncomingMessage,
  res: Sink,
  env: string,
  id: string,
  query: URLSearchParams,
) {
  const hash = keyHash(req);
  const expected = query.get('expected_last_heartbeat') || null;
  if (expected === null)
    throw new HttpError(400, 'invalid_request_error', 'expected_last_heartbeat is required');
  const ttl = lenientInt(query.get('desired_ttl_seconds'), DEFAULT_TTL_SECONDS, MAX_TTL_SECONDS);
  let row: BeatRow | null = null;
  try {
    row =
      expected === NO_HEARTBEAT
        ? await authed<BeatRow>('claimLease', [env, hash, id, ttl])
        : await authed<BeatRow>('extendLease', [env, hash, id, ttl, expected]);
  } catch (err) {
    // An echo Postgres cannot read as a timestamp (22007, 22008) matches nothing: a 412.
    if (!unreadableTimestamp(err)) throw err;
  }
  if (row?.state) {
    return sendJson(res, 200, {
      type: 'work_heartbeat',
      last_heartbeat: row.last_heartbeat,
      lease_extended: row.state === 'active',
      state: row.state,
      ttl_seconds: ttl,
    });
  }
  const current = (await run<BeatRow>('current', [env, id]))[0];
  if (!current) throw notFound();
  throw new HttpError(412, 'invalid_request_error', 'expected_last_heartbeat does not match', {
    error_code: 'heartbeat_precondition_failed',
    current_state: { ...current, lease_extended: false, ttl_seconds: ttl },
  });
}

async function stop(req: http.IncomingMessage, res: Sink, env: string, id: string) {
  const hash = keyHash(req);
  const text = await readBody(req);
  let force = false;
  if (text.trim() !== '') {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new HttpError(400, 'invalid_request_error', 'request body is not valid JSON');
    }
    const given = (body as { force?: unknown } | null)?.force;
    if (given !== undefined && given !== null && typeof given !== 'boolean') {
      throw new HttpError(400, 'invalid_request_error', 'force must be a boolean');
    }
    force = given === true;
  }
  const row = await authed<WorkRow>(force ? 'forceStop' : 'gracefulStop', [env, hash, id]);
  if (row.id === null) {
    if (!(await run('current', [env, id]))[0]) throw notFound();
    throw new HttpError(409, 'invalid_request_error', 'work item is already stopping or stopped', undefined, {
      'x-should-retry': 'false',
    });
  }
  sendJson(res, 200, toWire(row));
}

/** The kinds and the lease cap Leasehold's platform lane takes (src/api/routes/platform-scope.ts). */
const KINDS = new Set(['model_turn', 'tool_exec', 'web_exec', 'outputs_harvest', 'mcp_exec']);
const MAX_LEASE_TTL_SECONDS = 3600;

const badRequest = (message: string) => new HttpError(400, 'invalid_request_error', message);
const leaseLost = () =>
  new HttpError(409, 'lease_lost_error', 'the lease is no longer held by this proof', undefined, {
    'x-should-retry': 'false',
  });

/** The request's JSON object, with the platform lane's fields checked as far as they are given. */
async function platformBody(req: http.IncomingMessage): Promise<Record<string, unknown>> {
  let body: unknown;
  try {
    body = JSON.parse(await readBody(req));
  } catch {
    throw badRequest('request body is not valid JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw badRequest('request body must be a JSON object');
  }
  return body as Record<string, unknown>;
}

function kindOf(body: Record<string, unknown>): string {
  if (typeof body.kind !== 'string' || !KINDS.has(body.kind)) throw badRequest('kind is not a work kind');
  return body.kind;
}

function ttlOf(body: Record<string, unknown>): number {
  const ttl = body.ttl_seconds;
  if (typeof ttl !== 'number' || !(ttl > 0) || ttl > MAX_LEASE_TTL_SECONDS) {
    throw badRequest(`ttl_seconds must be in (0, ${MAX_LEASE_TTL_SECONDS}]`);
  }
  return ttl;
}

function leaseOf(body: Record<string, unknown>): string {
  if (typeof body.lease !== 'string' || body.lease === '') throw badRequest('lease is required');
  return body.lease;
}

function toPlatformItem(row: PlatformItemRow) {
  if (row.id === null) return null;
  return {
    id: row.id,
    environment_id: row.environment_id,
    session_id: row.session_id,
    kind: row.kind,
    lease: row.lease,
    reclaimed: row.reclaimed,
    claims: row.claims,
    metadata: row.metadata,
    trace_context: row.trace_context ?? null,
  };
}

/**
 * A settling statement's row. A lease Postgres cannot read as a timestamp is no proof: the statement runs again with none, so it still checks the key and claims nothing.
 */
async function settling<T>(name: StatementName, values: unknown[]): Promise<T> {
  try {
    return await authed<T>(name, values);
  } catch (err) {
    if (!unreadableTimestamp(err)) throw err;
    return authed<T>(name, values.with(2, null));
  }
}

async function platformClaim(req: http.IncomingMessage, res: Sink) {
  const hash = keyHash(req);
  const body = await platformBody(req);
  const row = await authed<PlatformItemRow>('platformClaim', [hash, kindOf(body), ttlOf(body)]);
  sendJson(res, 200, toPlatformItem(row));
}

async function platformComplete(req: http.IncomingMessage, res: Sink, id: string) {
  const hash = keyHash(req);
  const body = await platformBody(req);
  const row = await settling<{ completed: boolean }>('platformComplete', [hash, id, leaseOf(body)]);
  if (!row.completed) throw leaseLost();
  res.empty(204);
}

async function platformCompleteAndClaim(req: http.IncomingMessage, res: Sink, id: string) {
  const hash = keyHash(req);
  const body = await platformBody(req);
  const values = [hash, id, leaseOf(body), kindOf(body), ttlOf(body)];
  const row = await settling<PlatformItemRow & { completed: boolean }>('platformCompleteAndClaim', values);
  if (!row.completed) throw leaseLost();
  sendJson(res, 200, toPlatformItem(row));
}

const PLATFORM_ROUTE = /^\/v1\/platform\/work\/(?:(claim)|([^/]+)\/(complete|complete_and_claim))$/;

const ROUTE = /^\/v1\/environments\/([^/]+)\/work\/(?:(poll)|([^/]+)\/(ack|heartbeat|stop))$/;

async function handle(req: http.IncomingMessage, res: Sink): Promise<void> {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const p = PLATFORM_ROUTE.exec(path);
  if (p) {
    if (req.method !== 'POST') throw new HttpError(405, 'invalid_request_error', 'method not allowed');
    if (p[1]) return platformClaim(req, res);
    const id = decodeURIComponent(p[2]!);
    return p[3] === 'complete' ? platformComplete(req, res, id) : platformCompleteAndClaim(req, res, id);
  }
  const m = ROUTE.exec(path);
  if (!m) throw new HttpError(404, 'not_found_error', 'no such endpoint');
  const env = decodeURIComponent(m[1]!);
  const query = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  if (m[2]) {
    if (req.method !== 'GET') throw new HttpError(405, 'invalid_request_error', 'method not allowed');
    return poll(req, res, env, query);
  }
  if (req.method !== 'POST') throw new HttpError(405, 'invalid_request_error', 'method not allowed');
  const id = decodeURIComponent(m[3]!);
  if (m[4] === 'ack') return ack(req, res, env, id);
  if (m[4] === 'heartbeat') return heartbeat(req, res, env, id, query);
  return stop(req, res, env, id);
}

function answerError(res: Sink, err: unknown): void {
  if (err instanceof HttpError) {
    const error = {
      type: err.type,
      message: err.message,
      ...(err.details ? { details: err.details } : {}),
    };
    sendJson(res, err.status, { type: 'error', error }, err.headers);
    return;
  }
  console.error('[floor] error:', err instanceof Error ? err.message : err);
  sendJson(res, 500, { type: 'error', error: { type: 'api_error', message: 'internal error' } });
}

/**
 * `FLOOR_FRAMEWORK=hono`: the same handlers and statements behind Hono on @hono/node-server
 * (its router, context, middleware chain and Response objects) — what the framework alone
 * costs, the nearest floor for an app built on it.
 */
function honoServer(): http.Server {
  const app = new Hono<{ Bindings: HttpBindings }>();
  const base = '/v1/environments/:environmentId/work';
  const run = async (
    c: Context<{ Bindings: HttpBindings }>,
    answer: (req: http.IncomingMessage, res: Sink) => Promise<void>,
  ): Promise<Response> => {
    let response: Response | undefined;
    const res: Sink = {
      json(status, body, headers = {}) {
        response = c.body(`${JSON.stringify(body)}\n`, status as 200, {
          'content-type': 'application/json',
          ...headers,
        });
      },
      empty(status) {
        response = c.body(null, status as 204);
      },
    };
    try {
      await answer(c.env.incoming, res);
    } catch (err) {
      answerError(res, err);
    }
    return response!;
  };
  const env = (c: Context) => c.req.param('environmentId')!;
  const id = (c: Context) => c.req.param('workId')!;
  const query = (c: Context) => new URLSearchParams(new URL(c.req.url).search);
  app.get(`${base}/poll`, (c) => run(c, (req, res) => poll(req, res, env(c), query(c))));
  app.post(`${base}/:workId/ack`, (c) => run(c, (req, res) => ack(req, res, env(c), id(c))));
  app.post(`${base}/:workId/heartbeat`, (c) =>
    run(c, (req, res) => heartbeat(req, res, env(c), id(c), query(c))),
  );
  app.post(`${base}/:workId/stop`, (c) => run(c, (req, res) => stop(req, res, env(c), id(c))));
  const platform = '/v1/platform/work';
  app.post(`${platform}/claim`, (c) => run(c, (req, res) => platformClaim(req, res)));
  app.post(`${platform}/:workId/complete`, (c) => run(c, (req, res) => platformComplete(req, res, id(c))));
  app.post(`${platform}/:workId/complete_and_claim`, (c) =>
    run(c, (req, res) => platformCompleteAndClaim(req, res, id(c))),
  );
  return createAdaptorServer({ fetch: app.fetch }) as http.Server;
}

const server =
  process.env.FLOOR_FRAMEWORK === 'hono'
    ? honoServer()
    : http.createServer((req, res) => {
        handle(req, nodeSink(res)).catch((err: unknown) => {
          if (res.headersSent) return res.destroy();
          answerError(nodeSink(res), err);
        });
      });

server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1', () => {
  const { address, port } = server.address() as AddressInfo;
  console.warn(`floor listening on http://${address}:${port}`);
});

const shutdown = () => {
  server.close();
  server.closeAllConnections();
  void pool.end().finally(() => process.exit(0));
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
