import { sql } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { describe, expect, it } from 'vitest';
import { renderSql } from '../../src/db/render.js';
import { newId } from '../../src/ids.js';
import {
  claim,
  completeThenClaimMany,
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

describe('renderSql', () => {
  const dialect = new PgDialect();

  it("renders the queue's statements exactly as Drizzle's PostgreSQL dialect does", async () => {
    const env = newId('env');
    const statements = [
      await sentQuery((db) => claim(db, 'model_turn', 60_000)),
      await sentQuery((db) =>
        completeThenClaimMany(db, [held, { ...held, id: newId('work') }], 'web_exec', 30_000),
      ),
      await sentQuery((db) => pollMany(db, env, 5_000, 3)),
      await sentQuery((db) => heartbeat(db, env, held.id, NO_HEARTBEAT, 30)),
      await sentQuery((db) =>
        wireWritesMany(db, [
          { op: 'ack', environmentId: env, workId: newId('work') },
          { op: 'stop', environmentId: env, workId: newId('work'), force: true },
        ]),
      ),
      await sentQuery((db) =>
        enqueueMany(db, [
          { environmentId: env, sessionId: newId('sess'), kind: 'tool_exec', metadata: { a: "it's" } },
        ]),
      ),
    ];
    for (const query of statements) {
      const rendered = renderSql(query);
      expect(rendered).toEqual(dialect.sqlToQuery(query));
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
    expect(renderSql(query)).toEqual(dialect.sqlToQuery(query));
    expect(renderSql(query).sql).toContain('"we""ird"');
  });
});
