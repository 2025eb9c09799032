import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_PORT, parseConfig } from '../src/config.js';

describe('parseConfig', () => {
  it('an empty environment is the embedded default: no database URL, port 8787, loopback, statements prepared', () => {
    expect(parseConfig({})).toMatchObject({
      databaseUrl: null,
      port: DEFAULT_PORT,
      host: '127.0.0.1',
      journalReplicas: 1,
      preparedStatements: true,
      dbPoolSize: 10,
      dbAcquireTimeoutMs: 3_000,
      requestTimeoutMs: 60_000,
      longPollsPerKey: 64,
      longPollsPerProcess: 1_024,
      housekeepingEveryMs: 60_000,
      model: null,
      modelApiKey: null,
      modelBaseUrl: null,
      brainSlots: 4,
      retainStoppedWorkMs: 7 * 86_400_000,
      retainArchivedSessionsMs: 0,
      retainEmptyPlatformSessionsMs: 0,
      journalMaxAgeMs: null,
      journalMaxBytes: null,
    });
  });

  it('retentions and the journal age take a whole number with its unit (s, m, h, d) or off, from 1 hour; others are refused by name', () => {
    expect(
      parseConfig({
        LEASEHOLD_RETAIN_STOPPED_WORK: '36h',
        LEASEHOLD_RETAIN_ARCHIVED_SESSIONS: '30d',
        LEASEHOLD_RETAIN_EMPTY_PLATFORM_SESSIONS: '14d',
        LEASEHOLD_JOURNAL_MAX_AGE: '3600s',
      }),
    ).toMatchObject({
      retainStoppedWorkMs: 36 * 3_600_000,
      retainArchivedSessionsMs: 30 * 86_400_000,
      retainEmptyPlatformSessionsMs: 14 * 86_400_000,
      journalMaxAgeMs: 3_600_000,
    });
    expect(parseConfig({ LEASEHOLD_RETAIN_STOPPED_WORK: '90m' }).retainStoppedWorkMs).toBe(90 * 60_000);
    for (const off of ['0', 'off']) {
      expect(
        parseConfig({ LEASEHOLD_RETAIN_STOPPED_WORK: off, LEASEHOLD_JOURNAL_MAX_AGE: off }),
      ).toMatchObject({ retainStoppedWorkMs: 0, journalMaxAgeMs: 0 });
    }
    for (const name of [
      'LEASEHOLD_RETAIN_STOPPED_WORK',
      'LEASEHOLD_RETAIN_ARCHIVED_SESSIONS',
      'LEASEHOLD_RETAIN_EMPTY_PLATFORM_SESSIONS',
      'LEASEHOLD_JOURNAL_MAX_AGE',
    ]) {
      // No unit, a unit of its own, a fraction, under an hour, over ten years.
      for (const bad of ['7', '7w', '1.5d', '-1d', '59m', '3599s', '3651d', '7 d', 'D7']) {
        expect(() => parseConfig({ [name]: bad }), `${name}=${bad}`).toThrow(new RegExp(`^${name} must be`));
      }
    }
  });

  it('LEASEHOLD_JOURNAL_MAX_BYTES takes bytes from 1 MiB, or off', () => {
    expect(parseConfig({ LEASEHOLD_JOURNAL_MAX_BYTES: '1073741824' }).journalMaxBytes).toBe(1 << 30);
    expect(parseConfig({ LEASEHOLD_JOURNAL_MAX_BYTES: 'off' }).journalMaxBytes).toBe(0);
    for (const bad of ['1048575', '1GB', '-1', '1e9']) {
      expect(() => parseConfig({ LEASEHOLD_JOURNAL_MAX_BYTES: bad })).toThrow(/LEASEHOLD_JOURNAL_MAX_BYTES/);
    }
  });

  it('the Worker LISTENs unless DATABASE_URL names a Neon pooler host or LEASEHOLD_LISTEN is off', () => {
    const direct = 'postgres://u:p@ep-cool-darkness-123456.us-east-2.aws.neon.tech/db';
    const pooled = 'postgres://u:p@ep-cool-darkness-123456-pooler.us-east-2.aws.neon.tech/db';
    expect(parseConfig({ DATABASE_URL: direct }).listen).toBe(true);
    expect(parseConfig({ DATABASE_URL: pooled }).listen).toBe(false);
    expect(parseConfig({ DATABASE_URL: pooled, LEASEHOLD_LISTEN: 'on' }).listen).toBe(true);
    expect(parseConfig({ DATABASE_URL: direct, LEASEHOLD_LISTEN: 'off' }).listen).toBe(false);
    expect(() => parseConfig({ LEASEHOLD_LISTEN: 'yes' })).toThrow(/LEASEHOLD_LISTEN/);
  });

  it('the pipelined connection start-up is on, off with a local wsproxy, and either way when set', () => {
    expect(parseConfig({}).neonPipelineConnect).toBe(true);
    expect(parseConfig({ LEASEHOLD_NEON_WS_PROXY: '127.0.0.1:1' }).neonPipelineConnect).toBe(false);
    expect(
      parseConfig({ LEASEHOLD_NEON_WS_PROXY: '127.0.0.1:1', LEASEHOLD_NEON_PIPELINE_CONNECT: 'on' })
        .neonPipelineConnect,
    ).toBe(true);
    expect(parseConfig({ LEASEHOLD_NEON_PIPELINE_CONNECT: 'off' }).neonPipelineConnect).toBe(false);
    expect(() => parseConfig({ LEASEHOLD_NEON_PIPELINE_CONNECT: '1' })).toThrow(
      /LEASEHOLD_NEON_PIPELINE_CONNECT/,
    );
  });

  it('the pool size, acquire timeout, long-poll caps and brain slots take integers within their ranges and refuse the rest by name', () => {
    const config = parseConfig({ LEASEHOLD_DB_POOL_SIZE: '2', LEASEHOLD_DB_ACQUIRE_TIMEOUT_MS: '250' });
    expect(config).toMatchObject({ dbPoolSize: 2, dbAcquireTimeoutMs: 250 });
    for (const bad of ['0', '-1', '1.5', 'ten', '1001']) {
      expect(() => parseConfig({ LEASEHOLD_DB_POOL_SIZE: bad })).toThrow(/LEASEHOLD_DB_POOL_SIZE/);
    }
    for (const bad of ['99', '60001', '1e3']) {
      expect(() => parseConfig({ LEASEHOLD_DB_ACQUIRE_TIMEOUT_MS: bad })).toThrow(
        /LEASEHOLD_DB_ACQUIRE_TIMEOUT_MS/,
      );
    }
    expect(parseConfig({ LEASEHOLD_REQUEST_TIMEOUT_MS: '1000' }).requestTimeoutMs).toBe(1_000);
    for (const bad of ['99', '3600001', '1.5']) {
      expect(() => parseConfig({ LEASEHOLD_REQUEST_TIMEOUT_MS: bad })).toThrow(
        /LEASEHOLD_REQUEST_TIMEOUT_MS/,
      );
    }
    expect(() => parseConfig({ LEASEHOLD_JOURNAL_REPLICAS: '6' })).toThrow(/LEASEHOLD_JOURNAL_REPLICAS/);
    const caps = parseConfig({ LEASEHOLD_LONG_POLLS_PER_KEY: '2', LEASEHOLD_LONG_POLLS: '5' });
    expect(caps).toMatchObject({ longPollsPerKey: 2, longPollsPerProcess: 5 });
    expect(() => parseConfig({ LEASEHOLD_LONG_POLLS_PER_KEY: '0' })).toThrow(/LEASEHOLD_LONG_POLLS_PER_KEY/);
    expect(() => parseConfig({ LEASEHOLD_LONG_POLLS: 'many' })).toThrow(/LEASEHOLD_LONG_POLLS/);
    expect(parseConfig({ LEASEHOLD_BRAIN_SLOTS: '1' }).brainSlots).toBe(1);
    expect(parseConfig({ LEASEHOLD_BRAIN_SLOTS: '256' }).brainSlots).toBe(256);
    for (const bad of ['0', '-2', '2.5', 'four', '257']) {
      expect(() => parseConfig({ LEASEHOLD_BRAIN_SLOTS: bad })).toThrow(/LEASEHOLD_BRAIN_SLOTS/);
    }
    expect(parseConfig({ LEASEHOLD_HOUSEKEEPING_EVERY_MS: '0' }).housekeepingEveryMs).toBe(0);
    expect(() => parseConfig({ LEASEHOLD_HOUSEKEEPING_EVERY_MS: '-5' })).toThrow(
      /LEASEHOLD_HOUSEKEEPING_EVERY_MS/,
    );
  });

  it('LEASEHOLD_PREPARED_STATEMENTS takes on or off and refuses anything else by name', () => {
    expect(parseConfig({ LEASEHOLD_PREPARED_STATEMENTS: 'off' }).preparedStatements).toBe(false);
    expect(parseConfig({ LEASEHOLD_PREPARED_STATEMENTS: 'on' }).preparedStatements).toBe(true);
    for (const bad of ['0', 'false', 'OFF', 'yes']) {
      expect(() => parseConfig({ LEASEHOLD_PREPARED_STATEMENTS: bad })).toThrow(ConfigError);
      expect(() => parseConfig({ LEASEHOLD_PREPARED_STATEMENTS: bad })).toThrow(
        /LEASEHOLD_PREPARED_STATEMENTS/,
      );
    }
  });

  it('LEASEHOLD_MODEL takes scripted:<file> or anthropic and refuses anything else by name', () => {
    expect(parseConfig({ LEASEHOLD_MODEL: 'scripted:demo/script.json' }).model).toEqual({
      kind: 'scripted',
      file: 'demo/script.json',
    });
    const real = parseConfig({
      LEASEHOLD_MODEL: 'anthropic',
      LEASEHOLD_MODEL_API_KEY: 'sk-test',
      LEASEHOLD_MODEL_BASE_URL: 'https://models.example',
    });
    expect(real).toMatchObject({
      model: { kind: 'anthropic' },
      modelApiKey: 'sk-test',
      modelBaseUrl: 'https://models.example',
    });
    for (const bad of ['scripted:', 'scripted', 'Anthropic', 'openai', 'file.json']) {
      expect(() => parseConfig({ LEASEHOLD_MODEL: bad })).toThrow(/LEASEHOLD_MODEL must be/);
    }
    expect(() => parseConfig({ LEASEHOLD_MODEL_BASE_URL: 'api.anthropic.com' })).toThrow(
      /LEASEHOLD_MODEL_BASE_URL/,
    );
  });

  it('anthropic without LEASEHOLD_MODEL_API_KEY is refused, and ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL are never read', () => {
    expect(() => parseConfig({ LEASEHOLD_MODEL: 'anthropic' })).toThrow(ConfigError);
    // A bring-your-own-compute user points the ANTHROPIC_* variables at Leasehold itself.
    const byoc = { ANTHROPIC_API_KEY: 'sk-leasehold', ANTHROPIC_BASE_URL: 'http://127.0.0.1:8787' };
    expect(() => parseConfig({ ...byoc, LEASEHOLD_MODEL: 'anthropic' })).toThrow(/LEASEHOLD_MODEL_API_KEY/);
    expect(parseConfig(byoc)).toMatchObject({ model: null, modelApiKey: null, modelBaseUrl: null });
  });

  it('refuses a database URL, port or NATS URL of the wrong shape', () => {
    expect(() => parseConfig({ DATABASE_URL: 'mysql://x' })).toThrow(/DATABASE_URL/);
    expect(() => parseConfig({ PORT: '70000' })).toThrow(/PORT/);
    expect(() => parseConfig({ NATS_URL: 'nats://127.0.0.1:4222' })).toThrow(/NATS_URL/);
    expect(() => parseConfig({ NATS_URL: 'ws://127.0.0.1:1,nats://127.0.0.1:4222' })).toThrow(/NATS_URL/);
  });

  it("takes a cluster's websocket URLs comma-separated as NATS_URL", () => {
    const natsUrl = 'wss://a.example:443, wss://b.example:443,wss://c.example:443';
    expect(parseConfig({ NATS_URL: natsUrl }).natsUrl).toBe(natsUrl);
  });
});
