/**
 * How PostgreSQL's `jsonb` hands an object back, so an answer built from what the client sent
 * reads exactly like one read back from the row.
 */

const encoder = new TextEncoder();

/**
 * A flat object with its keys in `jsonb`'s order: shorter keys (in UTF-8 bytes) first, equal
 * lengths bytewise. Always a new object, never the one given.
 */
export function inJsonbOrder<T extends Record<string, unknown>>(object: T): T {
  const entries = Object.entries(object);
  if (entries.length > 1) {
    // Each key encoded once, not once per comparison.
    const bytes = new Map(entries.map(([key]) => [key, encoder.encode(key)]));
    entries.sort(([a], [b]) => compareBytes(bytes.get(a)!, bytes.get(b)!));
  }
  // fromEntries defines own properties, so a key like `__proto__` stays a key, as in JSON.parse.
  return Object.fromEntries(entries) as T;
}

function compareBytes(x: Uint8Array, y: Uint8Array): number {
  if (x.length !== y.length) return x.length - y.length;
  for (let i = 0; i < x.length; i++) {
    if (x[i] !== y[i]) return x[i]! - y[i]!;
  }
  return 0;
}
