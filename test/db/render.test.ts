import { type SQL, type SQLChunk, sql } from 'drizzle-orm';
import { PgDialect, pgTable, text } from 'drizzle-orm/pg-core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { renderSql } from '../../src/db/render.js';
import { newId } from '../../src/ids.js';
import {
  claim,
  claimMany,
  completeAndClaim,
  completeMany,
  completeThenClaimMany,
  enqueue,
  enqueueMany,
  heartbeat,
  type Item,
  NO_HEARTBEAT,
  pollMany,
  wireWritesMany,
} from '../../src/queue/index.js';
import { sentQuery } from '../helpers/plans.js';

const held: Item = {
  id: newId('work'),
  environmentId: newId('env'),
  sessionId: newId('sess'),
  kind: 'model_turn',
  lease: '2026-12-03T10:00:00.123456Z',
  reclaimed: false,
  claims: 1,
  metadata: {},
  traceContext: null,
};

/** What a render is judged on: the text and the parameters (`typings` are Drizzle's alone). */
const textAndParams = ({ sql, params }: { sql: string; params: unknown[] }) => ({ sql, params });

const things = pgTable('things', { name: text('name') });

/** Chunks Drizzle renders with its own code (the whole query goes to it). */
const foreign: Array<() => SQLChunk> = [
  () => things,
  () => things.name,
  () => sql.placeholder('p'),
  () => sql.param({ at: 1 }),
  () => sql.param('v', { mapToDriverValue: (v: string) => sql`upper(${v})` }),
  () => sql.param(7, { mapToDriverValue: (n: number) => n * 2 }),
  // A placeholder stays one whatever its encoder would make of it.
  () => sql.param(sql.placeholder('q'), { mapToDriverValue: () => 'mapped' }),
  () => sql`inline ${"it's"} ${3}`.inlineParams(),
  () => sql`x`.as('aliased'),
];

/** Random `sql` trees: text, values, names, lists, nested and joined fragments, and now and then a foreign chunk. */
const tree: fc.Arbitrary<SQL> = fc.letrec<{ node: SQL }>((tie) => ({
  node: fc
    .array(
      fc.oneof(
        { weight: 4, arbitrary: fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null)) },
        { weight: 1, arbitrary: fc.array(fc.oneof(fc.string(), fc.integer()), { maxLength: 3 }) },
        { weight: 1, arbitrary: fc.string().map((n) => sql.identifier(n)) },
        { weight: 1, arbitrary: fc.string().map((t) => sql.raw(t)) },
        {
          weight: 1,
          arbitrary: fc.oneof(fc.string(), fc.integer(), fc.constant(null)).map((v) => sql.param(v)),
        },
        { weight: 2, arbitrary: tie('node') },
        {
          weight: 1,
          arbitrary: fc.array(tie('node'), { maxLength: 3 }).map((parts) => sql.join(parts, sql`, `)),
        },
        { weight: 1, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: fc.integer({ min: 0, max: foreign.length - 1 }).map((i) => foreign[i]!()) },
      ),
      { maxLength: 5 },
    )
    .chain((values) =>
      fc
        .array(fc.string({ maxLength: 6 }), { minLength: values.length + 1, maxLength: values.length + 1 })
        .map((strings) => {
          const parts = Object.assign([...strings], { raw: strings }) as unknown as TemplateStringsArray;
          return sql(parts, ...(values as SQLChunk[]));
        }),
    ),
})).node;

describe('renderSql', () => {
  const dialect = new PgDialect();

  it('renders any tree of text, values, names, lists and fragments as the dialect does, foreign chunks included', () => {
    let foreignSeen = 0;
    fc.assert(
      fc.property(tree, (query) => {
        const expected = textAndParams(dialect.sqlToQuery(query));
        if (/"things"|upper\(|inline '/.test(expected.sql)) foreignSeen++;
        expect(renderSql(query)).toEqual(expected);
      }),
      { numRuns: 2_000 },
    );
    expect(foreignSeen).toBeGreaterThan(50);
  });

  it("renders the queue's statements exactly as Drizzle's PostgreSQL dialect does", async () => {
    const env = newId('env');
    const statements = [
      await sentQuery((db) => claim(db, 'model_turn', 60_000)),
      await sentQuery((db) =>
        completeThenClaimMany(db, [held, { ...held, id: newId('work') }], 'web_exec', 30_000),
      ),
      await sentQuery((db) => completeThenClaimMany(db, [held], 'model_turn', 5_000)),
      await sentQuery((db) => claimMany(db, 'tool_exec', 1, 30_000)),
      await sentQuery((db) => claimMany(db, 'web_exec', 7, 60_000)),
      await sentQuery((db) => completeMany(db, [held, { ...held, id: newId('work') }])),
      await sentQuery((db) => pollMany(db, env, 5_000, 3)),
      await sentQuery((db) => pollMany(db, env, 60_000, 1)),
      await sentQuery((db) => heartbeat(db, env, held.id, NO_HEARTBEAT, 30)),
      await sentQuery((db) =>
        wireWritesMany(db, [
          { op: 'ack', environmentId: env, workId: newId('work') },
          { op: 'stop', environmentId: env, workId: newId('work'), force: true },
        ]),
      ),
      await sentQuery((db) => completeAndClaim(db, held, 'model_turn', 30_000)),
      await sentQuery((db) =>
        completeAndClaim(db, { ...held, lease: 'not a proof' }, 'tool_exec', 5_000, {
          onlyIfCompleted: true,
        }),
      ),
      await sentQuery((db) =>
        enqueue(db, { environmentId: env, sessionId: newId('sess'), kind: 'model_turn' }),
      ),
      await sentQuery((db) =>
        enqueue(db, {
          environmentId: env,
          sessionId: newId('sess'),
          kind: 'tool_exec',
          metadata: { a: "it's" },
          bindSession: true,
        }),
      ),
      await sentQuery((db) =>
        enqueueMany(db, [
          { environmentId: env, sessionId: newId('sess'), kind: 'tool_exec', metadata: { a: "it's" } },
        ]),
      ),
    ];
    for (const query of statements) {
      const rendered = renderSql(query);
      expect(rendered).toEqual(textAndParams(dialect.sqlToQuery(query)));
      expect(rendered.params.length).toBeGreaterThan(0);
    }
  });

  it('renders names, raw text, joins, nested fragments and every kind of value as the dialect does', () => {
    const fragment = sql`x = ${1} AND y = ${'two'}`;
    const query = sql`SELECT ${sql.identifier('we"ird')}, ${sql.raw("'lit'")} FROM t
      WHERE ${fragment} AND z IN (${sql.join(
        [3, 4, 5].map((n) => sql`${n}`),
        sql`, `,
      )})
        AND j = ${JSON.stringify({ q: "'" })}::jsonb AND n IS ${null} AND b = ${true}
        AND a = ANY(${['p', 'q']})`;
    expect(renderSql(query)).toEqual(textAndParams(dialect.sqlToQuery(query)));
    expect(renderSql(query).sql).toContain('"we""ird"');
  });
});
