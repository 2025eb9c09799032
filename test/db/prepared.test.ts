import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { connectPg } from '../../src/db/drivers/node-pg.js';
import { statementName } from '../../src/db/drivers/prepared.js';
import { rows } from '../../src/db/handle.js';
import { useTestDb } from '../helpers/db.js';

describe('statementName', () => {
  it('names a text the second time it is seen, and always the same name after', () => {
    const text = `SELECT ${Math.random()} WHERE $1`;
    expect(statementName(text)).toBeUndefined();
    const name = statementName(text);
    expect(name).toMatch(/^lh_\d+$/);
    expect(statementName(text)).toBe(name);
  });

  it('gives different texts different names', () => {
    const a = `SELECT 'a${Math.random()}' WHERE $1`;
    const b = `SELECT 'b${Math.random()}' WHERE $1`;
    statementName(a);
    statementName(b);
    expect(statementName(a)).not.toBe(statementName(b));
  });
});

describe('prepared statements on real PostgreSQL connections', () => {
  const t = useTestDb('pg');

  async function preparedOnConnection(prepare: boolean): Promise<string[]> {
    const conn = connectPg(t.url!, { max: 1, prepare });
    try {
      const probe = `prepared-probe-${Math.random()}`;
      for (let i = 0; i < 3; i++) {
        const [row] = await rows<{ v: string }>(conn.db, sql`SELECT ${probe}::text AS v, ${i}::int AS i`);
        expect(row!.v).toBe(probe);
      }
      const found = await rows<{ statement: string }>(
        conn.db,
        sql`SELECT statement FROM pg_prepared_statements WHERE statement LIKE ${'%$1::text AS v%'}`,
      );
      return found.map((r) => r.statement);
    } finally {
      await conn.close();
    }
  }

  it('a repeated parameterised query runs as a statement prepared once on its connection', async () => {
    expect(await preparedOnConnection(true)).toHaveLength(1);
  });

  it('prepare: false leaves every statement unnamed', async () => {
    expect(await preparedOnConnection(false)).toHaveLength(0);
  });

  it('a frozen query config is named on a copy and still runs prepared', async () => {
    const conn = connectPg(t.url!, { max: 1 });
    try {
      const text = `SELECT $1::text AS frozen_${Math.random().toString(36).slice(2)}`;
      for (let i = 0; i < 3; i++) {
        const config = Object.freeze({ text, values: [`v${i}`] });
        const result = await conn.pool.query(config);
        expect(Object.values(result.rows[0]!)).toEqual([`v${i}`]);
        expect(config).not.toHaveProperty('name');
      }
      const prepared = await conn.pool.query(
        'SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement = $1',
        [text],
      );
      expect(prepared.rows[0]!.n).toBe(1);
    } finally {
      await conn.close();
    }
  });

  it('repeated queries without parameters (which may hold several statements) still run', async () => {
    const conn = connectPg(t.url!, { max: 1 });
    try {
      for (let i = 0; i < 3; i++) await conn.db.execute(sql.raw('SELECT 1; SELECT 2'));
    } finally {
      await conn.close();
    }
  });
});
