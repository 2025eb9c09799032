import { type SQL, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { pgCode } from '../../src/db/errors.js';
import { rows } from '../../src/db/handle.js';
import { SESSION_STATUSES } from '../../src/db/schema.js';
import { WORK_KINDS, WORK_LANES, WORK_STATES } from '../../src/db/work-enums.js';
import { type Driver, useTestDb } from '../helpers/db.js';

/** What a statement failed with (its SQLSTATE and the database's message), or null when it succeeded. */
const failure = (attempt: Promise<unknown>) =>
  attempt.then(
    () => null,
    (err: Error & { cause?: Error }) => ({ code: pgCode(err), message: (err.cause ?? err).message }),
  );

describe.each<Driver>(['pg', 'pglite'])('the value checks of the hot tables (%s)', (driver) => {
  const t = useTestDb(driver);

  const seed = async () => {
    await rows(
      t.db,
      sql`INSERT INTO environments (id, kind, name, config) VALUES ('env_v', 'cloud', 'v', '{"type":"cloud"}')`,
    );
    await rows(t.db, sql`INSERT INTO sessions (id, environment_id) VALUES ('sess_v', 'env_v')`);
  };
  const item = (id: string, kind: string, state: string, lane: string): SQL =>
    sql`INSERT INTO work_items (id, environment_id, session_id, kind, lane, state)
        VALUES (${id}, 'env_v', 'sess_v', ${kind}, ${lane}, ${state})`;

  it('work_items accepts every kind, state and lane of the lists, and nothing else, naming the column refused', async () => {
    await seed();
    // Every listed value goes in: each state with a kind of its own (a live state holds its
    // session's slot for that kind), each kind, each lane.
    for (const [i, state] of WORK_STATES.entries()) {
      expect(await failure(rows(t.db, item(`s${i}`, WORK_KINDS[i]!, state, 'claim')))).toBeNull();
    }
    for (const [i, kind] of WORK_KINDS.entries()) {
      expect(await failure(rows(t.db, item(`k${i}`, kind, 'stopped', 'poll')))).toBeNull();
    }
    expect(await rows(t.db, sql`SELECT count(*)::int AS n FROM work_items`)).toEqual([{ n: 10 }]);

    const refused = [
      { row: item('bad1', 'shell_exec', 'queued', 'claim'), type: 'work_kind', value: 'shell_exec' },
      { row: item('bad2', 'web_exec', 'paused', 'claim'), type: 'work_state', value: 'paused' },
      { row: item('bad3', 'web_exec', 'queued', 'push'), type: 'work_lane', value: 'push' },
      // Case and padding count: the lists are exact.
      { row: item('bad4', 'Model_Turn', 'queued', 'claim'), type: 'work_kind', value: 'Model_Turn' },
      { row: item('bad5', 'web_exec', 'queued ', 'claim'), type: 'work_state', value: 'queued ' },
    ];
    for (const { row, type, value } of refused) {
      const failed = await failure(rows(t.db, row));
      expect(failed?.code).toBe('22P02');
      expect(failed?.message).toBe(`invalid input value for enum ${type}: "${value}"`);
    }
    // An UPDATE is checked too.
    const update = await failure(rows(t.db, sql`UPDATE work_items SET state = 'done' WHERE id = 's0'`));
    expect(update?.message).toBe('invalid input value for enum work_state: "done"');
    expect(await rows(t.db, sql`SELECT id FROM work_items WHERE id LIKE 'bad%' OR state = 'done'`)).toEqual(
      [],
    );
  });

  it('sessions accepts every status of the list, and nothing else', async () => {
    await seed();
    for (const status of SESSION_STATUSES) {
      expect(
        await failure(rows(t.db, sql`UPDATE sessions SET status = ${status} WHERE id = 'sess_v'`)),
      ).toBeNull();
    }
    const failed = await failure(rows(t.db, sql`UPDATE sessions SET status = 'paused' WHERE id = 'sess_v'`));
    expect(failed?.message).toBe('invalid input value for enum session_status: "paused"');
    expect(await rows(t.db, sql`SELECT status FROM sessions`)).toEqual([{ status: 'terminated' }]);
  });

  it('the value types hold exactly the lists the code checks against, in order', async () => {
    const values = async (type: string) =>
      (
        await rows<{ v: string }>(t.db, sql`SELECT unnest(enum_range(NULL::${sql.raw(type)}))::text AS v`)
      ).map((r) => r.v);
    expect(await values('work_kind')).toEqual([...WORK_KINDS]);
    expect(await values('work_state')).toEqual([...WORK_STATES]);
    expect(await values('work_lane')).toEqual([...WORK_LANES]);
    expect(await values('session_status')).toEqual([...SESSION_STATUSES]);
  });
});
