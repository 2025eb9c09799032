/**
 * Configuration, parsed once at the edge of each entry point. The only file that names the
 * settings; entry points hand it their raw environment (`process.env` on Node, the bindings
 * object on Workers) and get a typed config or a `ConfigError` naming what is wrong.
 */

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export interface Config {
  /** Postgres connection string; null → the embedded PGlite database. */
  databaseUrl: string | null;
  /** Node server port. */
  port: number;
  /** Node server listen address; loopback unless told otherwise. */
  host: string;
  /**
   * The first admin API key, stored hashed — at start-up on Node, before the first credential
   * an isolate resolves on Workers; never logged.
   */
  adminKey: string | null;
  /** `ws://` or `wss://` URL of a NATS server with JetStream; null → journal off. */
  natsUrl: string | null;
  /** Where the embedded database keeps its files. */
  dataDir: string;
  /** Replicas of the journal stream when this process provisions it (3 in production). */
  journalReplicas: number;
  /**
   * Workers only, for local development: `host:port` of a plain WebSocket-to-TCP proxy the
   * Neon driver reaches an ordinary PostgreSQL through (`wrangler dev`, tests). Unset in production.
   */
  neonWsProxy: string | null;
  /**
   * Workers: send a new connection's start-up, password and first statement in one flight
   * (LEASEHOLD_NEON_PIPELINE_CONNECT; the Neon driver's `pipelineConnect`). Needs a server that
   * asks for a cleartext password, as Neon's does. Default on; off with `neonWsProxy` (a
   * local server seldom asks for one).
   */
  neonPipelineConnect: boolean;
  /**
   * Workers: long polls and event streams LISTEN on their request's own connection and wake
   * on NOTIFY (LEASEHOLD_LISTEN). Off, they re-read on a backoff. Default on, except over a
   * Neon pooled host (`-pooler` in its name): a transaction-mode pooler does not carry
   * notifications. Node always LISTENs, on a connection of its own.
   */
  listen: boolean;
  /**
   * Node only: base URL of an OTLP/HTTP collector (OTEL_EXPORTER_OTLP_ENDPOINT, the standard
   * name; `/v1/traces` and `/v1/metrics` are appended). Null → telemetry stays a no-op.
   */
  otlpEndpoint: string | null;
  /**
   * Node with DATABASE_URL: prepare repeated statements once per connection (default on).
   * Off only behind a transaction-mode pooler without protocol-level prepared statements
   * (PgBouncer before 1.21, or `max_prepared_statements = 0`).
   */
  preparedStatements: boolean;
  /** Node with DATABASE_URL: the connection pool's size (default 10). */
  dbPoolSize: number;
  /**
   * Node with DATABASE_URL: how long a request waits for a pooled connection before it is
   * answered 503 with `retry-after` (default 3,000 ms).
   */
  dbAcquireTimeoutMs: number;
  /**
   * Node: how long a client may take to send a whole request, headers and body
   * (LEASEHOLD_REQUEST_TIMEOUT_MS, default 60,000 ms); past it the server answers 408 and
   * closes the connection. Node's own default is five minutes, so a client that declares a
   * body and stops sending held its socket that long. Long polls and event streams are not
   * bound by it: their requests have arrived whole long before their answers end.
   */
  requestTimeoutMs: number;
  /**
   * Node: concurrent long polls per environment key and per process (defaults 64 and 1,024,
   * `src/api/poll-gate.ts`); over either → 429 with `retry-after`. Workers keep the defaults,
   * counted per isolate.
   */
  longPollsPerKey: number;
  longPollsPerProcess: number;
  /**
   * Node: how often this process runs housekeeping (default 60,000 ms); 0 turns it off, for
   * replicas that leave it to others or to an external cron. Runs may overlap safely.
   */
  housekeepingEveryMs: number;
  /**
   * The brain's model (LEASEHOLD_MODEL): `scripted:<file>` answers from a JSON file of Messages
   * responses (tests, demos, offline); `anthropic` calls the Messages API. Null → no brain.
   */
  model: ModelSetting | null;
  /**
   * The Messages API key (LEASEHOLD_MODEL_API_KEY) and base URL (LEASEHOLD_MODEL_BASE_URL;
   * null → https://api.anthropic.com). Never ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL: a
   * bring-your-own-compute user points those at Leasehold itself. The key is never logged.
   */
  modelApiKey: string | null;
  modelBaseUrl: string | null;
  /**
   * The brain (`npm run brain`, or the server's own with LEASEHOLD_MODEL): how many turns it
   * runs at once, each on its own claim of the `model_turn` lane (LEASEHOLD_BRAIN_SLOTS,
   * default 4).
   */
  brainSlots: number;
  /**
   * Housekeeping deletes work items stopped longer ago than this (LEASEHOLD_RETAIN_STOPPED_WORK,
   * default 7 days); 0 keeps them. A stopped item is terminal: nothing reads it but people.
   */
  retainStoppedWorkMs: number;
  /**
   * Housekeeping deletes API sessions archived longer ago than this, with their logs, tool
   * calls and work (LEASEHOLD_RETAIN_ARCHIVED_SESSIONS); 0, the default, keeps them: a
   * session is the user's record, so removing it is the operator's choice.
   */
  retainArchivedSessionsMs: number;
  /**
   * Housekeeping deletes a platform-lane session this long after the stopped-work retention
   * deleted the last of its items, and then purges its journal
   * (LEASEHOLD_RETAIN_EMPTY_PLATFORM_SESSIONS); 0, the default, keeps them: the platform may
   * come back to a session it named, and finds its journal there.
   */
  retainEmptyPlatformSessionsMs: number;
  /**
   * Limits of the journal stream (LEASEHOLD_JOURNAL_MAX_AGE, LEASEHOLD_JOURNAL_MAX_BYTES), set
   * when this process provisions it. Null: unset, so an existing stream keeps whatever limits
   * it has (a process started without them does not undo another's); 0: no limit.
   */
  journalMaxAgeMs: number | null;
  journalMaxBytes: number | null;
}

export type ModelSetting = { kind: 'scripted'; file: string } | { kind: 'anthropic' };

/** Node's default port: the same as `wrangler dev`, so local clients need no change between the two. */
export const DEFAULT_PORT = 8787;
export const DEFAULT_DATA_DIR = '.leasehold/data';
const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;
/** A week: long enough to look into what a stopped item did, short enough to bound the table. */
export const DEFAULT_RETAIN_STOPPED_WORK_MS = 7 * DAY_MS;
/** The `pg` pool's size (src/db/drivers/node-pg.ts). */
export const DEFAULT_DB_POOL_SIZE = 10;
/** How long a query waits for a pooled connection before it fails (src/db/drivers/node-pg.ts). */
export const DEFAULT_DB_ACQUIRE_TIMEOUT_MS = 3_000;
/**
 * How long a pooled connection may sit unused before the pool closes it (src/db/drivers/node-pg.ts).
 * `pg`'s own default is 10 s: a queue server's load comes in bursts, and after every lull longer
 * than that the next burst paid new backends, new prepared statements and cold catalog caches.
 */
export const DEFAULT_DB_IDLE_TIMEOUT_MS = 60_000;
/**
 * An environment key serves a fleet of workers, each polling one at a time (the WorkPoller
 * awaits a poll before the next), so this is a fleet of 64 workers per key; a larger fleet
 * takes more keys, which also keeps one leaked key from owning the process.
 */
export const MAX_LONG_POLLS_PER_KEY = 64;
/**
 * The load Leasehold is built for (1,000 concurrent idle long polls) with headroom. A parked
 * poll costs a socket, a timer and about two short queries a second (its first attempt and the
 * one at its deadline); in the fault suite's flood, 1,000 of them on a pool of 10 never had
 * more than two connections busy at once and left claims' p99 under 100 ms on an unloaded
 * 2-core machine. Past that, the event loop rather than the pool becomes what claims queue
 * behind.
 */
export const MAX_LONG_POLLS_PER_PROCESS = 1_024;

export function parseConfig(raw: Record<string, unknown>): Config {
  const text = (name: string): string | null => {
    const value = raw[name];
    if (value === undefined || value === null || value === '') return null;
    if (typeof value !== 'string') throw new ConfigError(`${name} must be a string`);
    return value;
  };
  const databaseUrl = text('DATABASE_URL');
  if (databaseUrl !== null && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must be a postgres:// or postgresql:// URL');
  }
  const portText = text('PORT');
  const port = portText === null ? DEFAULT_PORT : Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(`PORT must be an integer between 0 and 65535, not ${JSON.stringify(portText)}`);
  }
  const otlpEndpoint = text('OTEL_EXPORTER_OTLP_ENDPOINT');
  if (otlpEndpoint !== null && !isHttpUrl(otlpEndpoint)) {
    throw new ConfigError('OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL');
  }
  const modelApiKey = text('LEASEHOLD_MODEL_API_KEY');
  const model = modelSetting(text('LEASEHOLD_MODEL'), modelApiKey);
  const modelBaseUrl = text('LEASEHOLD_MODEL_BASE_URL');
  if (modelBaseUrl !== null && !isHttpUrl(modelBaseUrl)) {
    throw new ConfigError('LEASEHOLD_MODEL_BASE_URL must be an http:// or https:// URL');
  }
  const natsUrl = text('NATS_URL');
  // A cluster's servers may be listed comma-separated; each is a websocket URL.
  if (natsUrl !== null && !natsUrl.split(',').every((u) => /^wss?:\/\//.test(u.trim()))) {
    throw new ConfigError(
      'NATS_URL must be a ws:// or wss:// URL, or several comma-separated (the journal speaks NATS over websockets)',
    );
  }
  return {
    databaseUrl,
    port,
    host: text('HOST') ?? '127.0.0.1',
    adminKey: text('LEASEHOLD_ADMIN_KEY'),
    natsUrl,
    dataDir: text('LEASEHOLD_DATA_DIR') ?? DEFAULT_DATA_DIR,
    journalReplicas: replicas(text('LEASEHOLD_JOURNAL_REPLICAS')),
    neonWsProxy: text('LEASEHOLD_NEON_WS_PROXY'),
    neonPipelineConnect: onOff(
      'LEASEHOLD_NEON_PIPELINE_CONNECT',
      text('LEASEHOLD_NEON_PIPELINE_CONNECT') ?? (text('LEASEHOLD_NEON_WS_PROXY') === null ? 'on' : 'off'),
    ),
    listen: onOff('LEASEHOLD_LISTEN', text('LEASEHOLD_LISTEN') ?? (isNeonPooler(databaseUrl) ? 'off' : 'on')),
    otlpEndpoint,
    preparedStatements: onOff('LEASEHOLD_PREPARED_STATEMENTS', text('LEASEHOLD_PREPARED_STATEMENTS')),
    dbPoolSize: integerIn(
      'LEASEHOLD_DB_POOL_SIZE',
      text('LEASEHOLD_DB_POOL_SIZE'),
      DEFAULT_DB_POOL_SIZE,
      1,
      1_000,
    ),
    dbAcquireTimeoutMs: integerIn(
      'LEASEHOLD_DB_ACQUIRE_TIMEOUT_MS',
      text('LEASEHOLD_DB_ACQUIRE_TIMEOUT_MS'),
      DEFAULT_DB_ACQUIRE_TIMEOUT_MS,
      100,
      60_000,
    ),
    requestTimeoutMs: integerIn(
      'LEASEHOLD_REQUEST_TIMEOUT_MS',
      text('LEASEHOLD_REQUEST_TIMEOUT_MS'),
      60_000,
      100,
      3_600_000,
    ),
    longPollsPerKey: integerIn(
      'LEASEHOLD_LONG_POLLS_PER_KEY',
      text('LEASEHOLD_LONG_POLLS_PER_KEY'),
      MAX_LONG_POLLS_PER_KEY,
      1,
      100_000,
    ),
    longPollsPerProcess: integerIn(
      'LEASEHOLD_LONG_POLLS',
      text('LEASEHOLD_LONG_POLLS'),
      MAX_LONG_POLLS_PER_PROCESS,
      1,
      100_000,
    ),
    housekeepingEveryMs: integerIn(
      'LEASEHOLD_HOUSEKEEPING_EVERY_MS',
      text('LEASEHOLD_HOUSEKEEPING_EVERY_MS'),
      60_000,
      0,
      86_400_000,
    ),
    model,
    modelApiKey,
    modelBaseUrl,
    brainSlots: integerIn('LEASEHOLD_BRAIN_SLOTS', text('LEASEHOLD_BRAIN_SLOTS'), 4, 1, 256),
    retainStoppedWorkMs:
      duration('LEASEHOLD_RETAIN_STOPPED_WORK', text('LEASEHOLD_RETAIN_STOPPED_WORK')) ??
      DEFAULT_RETAIN_STOPPED_WORK_MS,
    retainArchivedSessionsMs:
      duration('LEASEHOLD_RETAIN_ARCHIVED_SESSIONS', text('LEASEHOLD_RETAIN_ARCHIVED_SESSIONS')) ?? 0,
    retainEmptyPlatformSessionsMs:
      duration(
        'LEASEHOLD_RETAIN_EMPTY_PLATFORM_SESSIONS',
        text('LEASEHOLD_RETAIN_EMPTY_PLATFORM_SESSIONS'),
      ) ?? 0,
    journalMaxAgeMs: duration('LEASEHOLD_JOURNAL_MAX_AGE', text('LEASEHOLD_JOURNAL_MAX_AGE')),
    journalMaxBytes: byteLimit('LEASEHOLD_JOURNAL_MAX_BYTES', text('LEASEHOLD_JOURNAL_MAX_BYTES')),
  };
}

function modelSetting(value: string | null, apiKey: string | null): ModelSetting | null {
  if (value === null) return null;
  if (value === 'anthropic') {
    if (apiKey === null) {
      throw new ConfigError('LEASEHOLD_MODEL=anthropic needs LEASEHOLD_MODEL_API_KEY (the Messages API key)');
    }
    return { kind: 'anthropic' };
  }
  if (value.startsWith('scripted:') && value.length > 'scripted:'.length) {
    return { kind: 'scripted', file: value.slice('scripted:'.length) };
  }
  throw new ConfigError(
    `LEASEHOLD_MODEL must be anthropic or scripted:<file of Messages responses>, not ${JSON.stringify(value)}`,
  );
}

function onOff(name: string, value: string | null): boolean {
  if (value === null || value === 'on') return true;
  if (value === 'off') return false;
  throw new ConfigError(`${name} must be on or off, not ${JSON.stringify(value)}`);
}

/** A Neon pooled connection string names a host `<endpoint>-pooler.<region>…`. */
function isNeonPooler(databaseUrl: string | null): boolean {
  if (databaseUrl === null) return false;
  try {
    return new URL(databaseUrl).hostname.split('.')[0]!.endsWith('-pooler');
  } catch {
    return false;
  }
}

function isHttpUrl(value: string): boolean {
  try {
    return ['http:', 'https:'].includes(new URL(value).protocol);
  } catch {
    return false;
  }
}

function replicas(value: string | null): number {
  return integerIn('LEASEHOLD_JOURNAL_REPLICAS', value, 1, 1, 5);
}

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: HOUR_MS, d: DAY_MS };

/**
 * A retention or age: a whole number with its unit (`45s`, `30m`, `12h`, `7d`), or `0` / `off`
 * for none; null when unset. At least an hour (a shorter one is a mistyped unit, and would
 * take rows people are still looking at) and at most ten years.
 */
function duration(name: string, value: string | null): number | null {
  if (value === null) return null;
  if (value === '0' || value === 'off') return 0;
  const match = /^(\d{1,9})([smhd])$/.exec(value);
  const ms = match ? Number(match[1]) * UNIT_MS[match[2]!]! : Number.NaN;
  if (!(ms >= HOUR_MS && ms <= 3_650 * DAY_MS)) {
    throw new ConfigError(
      `${name} must be a duration from 1h to 3650d with its unit (s, m, h or d, e.g. 7d), or off, not ${JSON.stringify(value)}`,
    );
  }
  return ms;
}

/** A byte budget: a whole number of bytes (at least 1 MiB, one record's largest), `0` / `off` for none. */
function byteLimit(name: string, value: string | null): number | null {
  if (value === null) return null;
  if (value === '0' || value === 'off') return 0;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1024 * 1024 || !Number.isSafeInteger(n)) {
    throw new ConfigError(
      `${name} must be a number of bytes from 1048576, or off, not ${JSON.stringify(value)}`,
    );
  }
  return n;
}

function integerIn(name: string, value: string | null, fallback: number, min: number, max: number): number {
  if (value === null) return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, not ${JSON.stringify(value)}`);
  }
  return n;
}
