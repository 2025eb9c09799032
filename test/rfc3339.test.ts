import { describe, expect, it } from 'vitest';
import { isRfc3339 } from '../src/rfc3339.js';

describe('isRfc3339', () => {
  it('accepts UTC and offset forms with any fraction precision', () => {
    for (const v of [
      '2026-11-30T09:34:12Z',
      '2026-11-30T09:34:12.1Z',
      '2026-11-30T09:34:12.123456Z',
      '2026-11-30T09:34:12.123456789Z',
      '2026-11-30t09:34:12z',
      '2026-11-30T09:34:12+05:30',
      '2024-02-29T23:59:59-08:00',
    ]) {
      expect(isRfc3339(v), v).toBe(true);
    }
  });

  it('rejects what the database would refuse or misread', () => {
    for (const v of [
      'not-a-timestamp',
      '',
      'NO_HEARTBEAT',
      '2026-11-30 09:34:12Z',
      '2026-11-30T09:34:12',
      '2026-02-29T00:00:00Z',
      '2026-02-30T00:00:00Z',
      '2026-04-31T00:00:00Z',
      '2026-13-01T00:00:00Z',
      '2026-00-10T00:00:00Z',
      '2026-11-30T24:00:00Z',
      '2026-11-30T23:60:00Z',
      '2026-11-30T23:59:60Z',
      '2026-11-30T23:59:59+24:00',
      '0000-01-01T00:00:00Z',
      '2026-11-30T09:34:12.Z',
      '2026-11-30T09:34:12Z\u0000',
      '+2026-11-30T09:34:12Z',
    ]) {
      expect(isRfc3339(v), v).toBe(false);
    }
  });
});
