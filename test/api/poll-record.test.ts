import { describe, expect, it } from 'vitest';
import { PollRecords, RECORD_EVERY_MS } from '../../src/api/poll-record.js';

describe('PollRecords', () => {
  it("writes a worker's first poll, then at most once every RECORD_EVERY_MS", () => {
    const clock = { now: 0 };
    const records = new PollRecords(() => clock.now);
    expect(records.due('env_a', 'w1')).toBe(true);
    clock.now += RECORD_EVERY_MS - 1;
    expect(records.due('env_a', 'w1')).toBe(false);
    clock.now += 1;
    expect(records.due('env_a', 'w1')).toBe(true);
    expect(records.due('env_a', 'w1')).toBe(false);
  });

  it('keeps workers and environments apart', () => {
    const records = new PollRecords(() => 0);
    expect(records.due('env_a', 'w1')).toBe(true);
    expect(records.due('env_a', 'w2')).toBe(true);
    expect(records.due('env_b', 'w1')).toBe(true);
    expect(records.due('env_a', 'w1')).toBe(false);
  });

  it('a forgotten worker (its write failed) is written on its next poll', () => {
    const records = new PollRecords(() => 0);
    expect(records.due('env_a', 'w1')).toBe(true);
    records.forget('env_a', 'w1');
    expect(records.due('env_a', 'w1')).toBe(true);
  });
});
