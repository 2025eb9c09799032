import { sql } from 'drizzle-orm';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { rows } from '../../src/db/handle.js';
import { inJsonbOrder } from '../../src/db/jsonb.js';
import { useTestDb } from '../helpers/db.js';

/** Key pieces of one to four UTF-8 bytes, so equal lengths and bytewise ties both occur. */
const PIECES = ['a', 'b', 'B', 'z', '_', '~', '\u007f', 'é', 'ÿ', 'ā', '\uffee', '漢', '😀', '\ud7ff'];

/** Flat objects of one to eight keys made of zero to three pieces. */
const objectArbitrary = fc.dictionary(
  fc.array(fc.constantFrom(...PIECES), { maxLength: 3 }).map((pieces) => pieces.join('')),
  fc.constantFrom('0', '1', ''),
  { minKeys: 1, maxKeys: 8, noNullPrototype: true },
);

describe.each(['pg', 'pglite'] as const)('inJsonbOrder (%s)', (driver) => {
  const t = useTestDb(driver);

  it('orders keys exactly as jsonb hands them back, for keys of one to four UTF-8 bytes per character', async () => {
    // Seeded, so a failure names inputs that can be replayed.
    const objects = fc.sample(objectArbitrary, { seed: 18, numRuns: 200 });
    const stored = await rows<{ o: Record<string, string> }>(
      t.db,
      sql`SELECT o FROM jsonb_array_elements(${JSON.stringify(objects)}::jsonb) WITH ORDINALITY AS e(o, n) ORDER BY n`,
    );
    expect(stored).toHaveLength(objects.length);
    for (const [i, object] of objects.entries()) {
      const ordered = inJsonbOrder(object);
      expect(Object.keys(ordered)).toEqual(Object.keys(stored[i]!.o));
      expect(ordered).toEqual(object);
    }
  });

  it('returns a new object and keeps a __proto__ key a key', () => {
    const given = JSON.parse('{"__proto__": "x", "a": "y"}') as Record<string, string>;
    const ordered = inJsonbOrder(given);
    expect(ordered).not.toBe(given);
    expect(Object.keys(ordered)).toEqual(['a', '__proto__']);
    expect(Object.getPrototypeOf(ordered)).toBe(Object.prototype);
  });
});
