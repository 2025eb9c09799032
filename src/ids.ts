/**
 * Identifiers Leasehold mints: `<prefix>_<24 lowercase Crockford base32 characters>`, the
 * token drawn from 15 CSPRNG bytes (120 bits, exactly 24 characters, no padding). The
 * alphabet drops i, l, o and u so an id read aloud or retyped cannot be misread.
 */
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const TOKEN = /^[0-9abcdefghjkmnpqrstvwxyz]{24}$/;

export type IdPrefix = 'work' | 'env' | 'envkey' | 'apikey' | 'req' | 'agent' | 'sess' | 'sevt' | 'hc';

/**
 * CSPRNG bytes drawn 4 KiB at a time: a `getRandomValues` call costs microseconds whatever
 * its size, and a batch enqueue mints a thousand ids (Node's randomUUID buffers the same
 * way). Each byte is handed out once.
 */
const POOL = new Uint8Array(4096);
let poolAt = POOL.length;

function randomBytes15(): Uint8Array {
  if (poolAt + 15 > POOL.length) {
    crypto.getRandomValues(POOL);
    poolAt = 0;
  }
  const bytes = POOL.subarray(poolAt, poolAt + 15);
  poolAt += 15;
  return bytes;
}

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${idToken(randomBytes15())}`;
}

/**
 * The 24 characters of 15 bytes, big-endian, 5 bits each. Each 5-byte group is two 20-bit
 * halves, so every step is a 32-bit integer shift and mask: a batch enqueue mints a thousand
 * ids, and dividing 40-bit doubles made the encoding cost more than the rest of the id.
 */
export function idToken(bytes: Uint8Array): string {
  let out = '';
  for (let g = 0; g < 15; g += 5) {
    const hi = (bytes[g]! << 12) | (bytes[g + 1]! << 4) | (bytes[g + 2]! >> 4);
    const lo = ((bytes[g + 2]! & 15) << 16) | (bytes[g + 3]! << 8) | bytes[g + 4]!;
    out +=
      ALPHABET[hi >> 15]! +
      ALPHABET[(hi >> 10) & 31]! +
      ALPHABET[(hi >> 5) & 31]! +
      ALPHABET[hi & 31]! +
      ALPHABET[lo >> 15]! +
      ALPHABET[(lo >> 10) & 31]! +
      ALPHABET[(lo >> 5) & 31]! +
      ALPHABET[lo & 31]!;
  }
  return out;
}

/** True when `id` is exactly an id of this prefix as Leasehold mints them. */
export function isMintedId(id: string, prefix: IdPrefix): boolean {
  return id.startsWith(`${prefix}_`) && TOKEN.test(id.slice(prefix.length + 1));
}

/** Session ids come from the platform and are opaque: 1–128 of [A-Za-z0-9_-]. */
const SESSION_ID = /^[A-Za-z0-9_-]{1,128}$/;
export function isSessionId(id: string): boolean {
  return SESSION_ID.test(id);
}
