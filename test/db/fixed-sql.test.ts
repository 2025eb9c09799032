import { type SQL, sql } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Bindable, fixedSql, fixedSqlByLimit } from '../../src/db/fixed-sql.js';
import { renderSql } from '../../src/db/render.js';

const dialect = new PgDialect();
const textAndParams = ({ sql, params }: { sql: string; params: unknown[] }) => ({ sql, params });

/** One template, written once with placeholders and once with the values in place. */
function statement(v: (name: 'a' | 'b' | 'c') => unknown): SQL {
  const inner = sql`lower(${v('b')}) || ${'fixed'}`;
  return sql`SELECT ${sql.identifier('we"ird')}, ${v('a')}, ${inner} FROM t
    WHERE k IN ${sql.raw("('x', 'y')")} AND n = ${7} AND a = ${v('a')} AND c IS ${v('c')}`;
}

const bindable: fc.Arbitrary<Bindable> = fc.oneof(
  fc.string(),
  fc.integer(),
  fc.double({ noNaN: true }),
  fc.boolean(),
  fc.bigInt(),
  fc.constant(null),
);

describe('fixedSql', () => {
  const fixed = fixedSql<'a' | 'b' | 'c'>(statement((name) => sql.placeholder(name)));

  it('renders every call as the same template with its values written in, by renderSql and by the dialect', () => {
    fc.assert(
      fc.property(bindable, bindable, bindable, (a, b, c) => {
        const values = { a, b, c };
        const expected = textAndParams(dialect.sqlToQuery(statement((name) => values[name])));
        const query = fixed(values);
        expect(renderSql(query)).toEqual(expected);
        expect(textAndParams(dialect.sqlToQuery(query))).toEqual(expected);
      }),
      { numRuns: 500 },
    );
  });

  it('renders inside another template, and with its parameters inlined, as the dialect renders the written-in template', () => {
    const values = { a: "it's", b: 2, c: null };
    const written = statement((name) => values[name]);
    const outer = (q: SQL) => sql`WITH q AS (${q}) SELECT * FROM q WHERE z = ${'last'}`;
    expect(renderSql(outer(fixed(values)))).toEqual(textAndParams(dialect.sqlToQuery(outer(written))));
    expect(renderSql(fixed(values).inlineParams())).toEqual(
      textAndParams(dialect.sqlToQuery(statement((name) => values[name]).inlineParams())),
    );
  });

  it('gives each call its own parameters: an earlier query keeps its values', () => {
    const first = fixed({ a: 'one', b: 1, c: true });
    fixed({ a: 'two', b: 2, c: false });
    expect(renderSql(first).params).toEqual(['one', 1, 'fixed', 7, 'one', true]);
  });

  it('refuses a template whose own text holds a parameter marker, or that fixes a value that is not a plain one', () => {
    expect(() => fixedSql(sql`SELECT ${sql.raw('$1')}, ${sql.placeholder('a')}`)).toThrow(/"\$n"/);
    expect(() => fixedSql(sql`SELECT ${sql.param({ at: 1 })}`)).toThrow(TypeError);
  });

  it('refuses to be appended to, which would leave its rendering stale', () => {
    expect(() => fixed({ a: 'x', b: 1, c: null }).append(sql`LIMIT 1`)).toThrow(TypeError);
  });

  it('refuses a call whose value is missing or not a plain one, naming it', () => {
    expect(() => fixed({ a: 'x', b: 1 } as never)).toThrow(/"c"/);
    expect(() => fixed({ a: 'x', b: { no: 1 }, c: null } as never)).toThrow(/"b"/);
  });
});

describe('fixedSqlByLimit', () => {
  const template = (limit: unknown) => sql`SELECT id FROM t WHERE k = ${sql.placeholder('k')} LIMIT ${limit}`;
  const byLimit = fixedSqlByLimit<'k'>((limit) => (limit === 1 ? template(sql.raw('1')) : template(limit)));

  it('a single call gets the LIMIT written in, a batch gets it bound; both as the dialect renders them', () => {
    expect(renderSql(byLimit({ k: 'x', n: 1 }))).toEqual({
      sql: 'SELECT id FROM t WHERE k = $1 LIMIT 1',
      params: ['x'],
    });
    expect(renderSql(byLimit({ k: 'y', n: 4 }))).toEqual({
      sql: 'SELECT id FROM t WHERE k = $1 LIMIT $2',
      params: ['y', 4],
    });
    for (const n of [1, 2, 1000]) {
      const query = byLimit({ k: 'z', n });
      expect(renderSql(query)).toEqual(textAndParams(dialect.sqlToQuery(query)));
    }
  });
});
