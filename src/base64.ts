/**
 * Base64 with Web APIs only (`btoa`/`atob`), so the same code runs on Node and Workers:
 * standard base64 for bytes (what Go's encoding/json writes for a `[]byte`), and base64url
 * without padding for tokens and cursors that travel in URLs.
 */

export function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

export function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/** base64url, no padding, of bytes or of a string's UTF-8. */
export function toBase64Url(value: Uint8Array | string): string {
  const bytes = typeof value === 'string' ? new TextEncoder().encode(value) : value;
  return toBase64(bytes).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** The UTF-8 text a base64url string encodes; throws on malformed input. */
export function fromBase64UrlText(value: string): string {
  return new TextDecoder('utf-8', { fatal: true }).decode(
    fromBase64(value.replace(/-/g, '+').replace(/_/g, '/')),
  );
}
