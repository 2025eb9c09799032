import { describe, expect, it } from 'vitest';
import { idToken, isMintedId, isSessionId, newId } from '../src/ids.js';

describe('ids', () => {
  it('mints a prefix and 24 lowercase Crockford base32 characters', () => {
    for (const prefix of ['work', 'env', 'envkey', 'apikey', 'req'] as const) {
      const id = newId(prefix);
      expect(id).toMatch(new RegExp(`^${prefix}_[0-9abcdefghjkmnpqrstvwxyz]{24}$`));
      expect(isMintedId(id, prefix)).toBe(true);
    }
  });

  it('draws every character of the alphabet and never repeats in 10,000 ids', () => {
    const ids = new Set(Array.from({ length: 10_000 }, () => newId('work')));
    expect(ids.size).toBe(10_000);
    const seen = new Set([...ids].flatMap((id) => [...id.slice(5)]));
    expect([...seen].sort().join('')).toBe('0123456789abcdefghjkmnpqrstvwxyz');
  });

  it('encodes 15 bytes as their 120 bits, most significant first, five bits a character', () => {
    const alphabet = '0123456789abcdefghjkmnpqrstvwxyz';
    const reference = (bytes: Uint8Array) => {
      let n = 0n;
      for (const b of bytes) n = (n << 8n) | BigInt(b);
      return Array.from({ length: 24 }, (_, i) => alphabet[Number((n >> BigInt(5 * (23 - i))) & 31n)]).join(
        '',
      );
    };
    expect(idToken(new Uint8Array(15))).toBe('0'.repeat(24));
    expect(idToken(new Uint8Array(15).fill(255))).toBe('z'.repeat(24));
    for (let i = 0; i < 2_000; i++) {
      const bytes = crypto.getRandomValues(new Uint8Array(15));
      expect(idToken(bytes)).toBe(reference(bytes));
    }
  });

  it('recognises only ids of the asked prefix and shape', () => {
    expect(isMintedId('work_0123456789abcdefghjkmnpq', 'work')).toBe(true);
    expect(isMintedId('env_0123456789abcdefghjkmnpq', 'work')).toBe(false);
    expect(isMintedId('work_0123456789abcdefghjkmnpi', 'work')).toBe(false); // i is not in the alphabet
    expect(isMintedId('work_0123456789ABCDEFGHJKMNPQ', 'work')).toBe(false);
    expect(isMintedId('work_short', 'work')).toBe(false);
    expect(isMintedId('work_0123456789abcdefghjkmnpq\u0000', 'work')).toBe(false);
  });

  it('accepts opaque platform session ids of 1–128 [A-Za-z0-9_-] and nothing else', () => {
    expect(isSessionId('sesn_abc')).toBe(true);
    expect(isSessionId('Session-42_X')).toBe(true);
    expect(isSessionId('a'.repeat(128))).toBe(true);
    expect(isSessionId('a'.repeat(129))).toBe(false);
    expect(isSessionId('')).toBe(false);
    expect(isSessionId('sesn abc')).toBe(false);
    expect(isSessionId("sesn'; drop table x;--")).toBe(false);
    expect(isSessionId('sesn/../x')).toBe(false);
  });
});
