/**
 * Secrets: minted from 32 CSPRNG bytes, shown once, stored only as a SHA-256 hex digest.
 *
 * Hashing uses `node:crypto`, which Workers provide under `nodejs_compat` (wrangler.toml):
 * every authenticated request hashes its key, and Web Crypto's digest is asynchronous —
 * on Node a round trip through the thread pool costing tens of microseconds — where a
 * synchronous hash of a 50-byte string costs about two.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { toBase64Url } from '../base64.js';

export type SecretKind = 'env' | 'api';

/** Recognisable prefixes, so a leaked key is easy to spot (and to scan for). */
const PREFIX: Record<SecretKind, string> = { env: 'lh_env_', api: 'lh_api_' };

export function mintSecret(kind: SecretKind): string {
  const bytes = new Uint8Array(32);
  crypto.getRandomValues(bytes);
  return PREFIX[kind] + toBase64Url(bytes);
}

/** Lowercase hex SHA-256 of the whole secret string (UTF-8). */
export async function hashSecret(secret: string): Promise<string> {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

const utf8 = new TextEncoder();

/**
 * Compares two digests in time that depends only on their length, so a stored hash is
 * never confirmed byte by byte through response timing. `timingSafeEqual` is the runtime's
 * own constant-time compare (a JIT may shortcut a hand-written loop); it refuses unequal
 * lengths, and a digest's length is no secret.
 */
export function digestsEqual(a: string, b: string): boolean {
  const x = utf8.encode(a);
  const y = utf8.encode(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
