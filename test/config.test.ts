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
      longPollsPerKey: 64,
      longPollsPerProcess: 1_024,
      housekeepingEveryMs: 60_000,
    });
  });

  it('the pool size, acquire timeout and long-poll caps take integers within their ranges and refuse the rest by name', () => {
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
    expect(() => parseConfig({ LEASEHOLD_JOURNAL_REPLICAS: '6' })).toThrow(/LEASEHOLD_JOURNAL_REPLICAS/);
    const caps = parseConfig({ LEASEHOLD_LONG_POLLS_PER_KEY: '2', LEASEHOLD_LONG_POLLS: '5' });
    expect(caps).toMatchObject({ longPollsPerKey: 2, longPollsPerProcess: 5 });
    expect(() => parseConfig({ LEASEHOLD_LONG_POLLS_PER_KEY: '0' })).toThrow(/LEASEHOLD_LONG_POLLS_PER_KEY/);
    expect(() => parseConfig({ LEASEHOLD_LONG_POLLS: 'many' })).toThrow(/LEASEHOLD_LONG_POLLS/);
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

  it('refuses a database URL, port or NATS URL of the wrong shape', () => {
    expect(() => parseConfig({ DATABASE_URL: 'mysql://x' })).toThrow(/DATABASE_URL/);
    expect(() => parseConfig({ PORT: '70000' })).toThrow(/PORT/);
    expect(() => parseConfig({ NATS_URL: 'nats://127.0.0.1:4222' })).toThrow(/NATS_URL/);
  });
});
