import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { rows } from '../../src/db/handle.js';
import { inJsonbOrder } from '../../src/db/jsonb.js';
import { useTestDb } from '../helpers/db.js';

/** Key pieces of one to four UTF-8 bytes, so equal lengths and bytewise ties both occur. */
const PIECES = ['a', 'b', 'B', 'z', '_', '~', '\u007f', 'é', 'ÿ', 'ā', '\uffee', '漢', '😀', '\ud7ff'];

function randomKeys(random: () => number): string[] {
  const keys = new Set<string>();
  const n = 1 + Math.floor(random() * 8);
  while (keys.size < n) {
    let key = '';
    const length = Math.floor(random() * 4);
    for (let i = 0; i < length; i++) key += PIECES[Math.floor(random() * PIECES.length)];
    keys.add(key);
  }
  return [...keys];
}

/** A small seeded generator, so a failure names inputs that can be replayed. */
function seeded(seed: number): () => number {
  return () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
}

describe.each(['pg', 'pglite'] as const)('inJsonbOrder (%s)', (driver) => {
  const t = useTestDb(driver);

  it('orders keys exactly as jsonb hands them back, for keys of one to four UTF-8 bytes per character', async () => {
    const random = seeded(18);
    const objects = Array.from({ length: 200 }, () =>
      Object.fromEntries(randomKeys(random).map((key, i) => [key, String(i)])),
    );
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
