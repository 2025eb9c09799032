import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { issueEnvironmentKey } from '../../src/auth/credentials.js';
import { maybeRow } from '../../src/db/handle.js';
import { archiveEnvironment, deleteEnvironment, getEnvironment } from '../../src/environments/index.js';
import { useTestDb } from '../helpers/db.js';
import { createEnvironment, insertWork, setupSession } from '../helpers/factories.js';
import { untilSomeoneWaitsForALock } from '../helpers/locks.js';

const UNKNOWN = 'env_0000000000000000000000zz';

describe.each(['pg', 'pglite'] as const)('deleteEnvironment and archiveEnvironment (%s)', (driver) => {
  const t = useTestDb(driver);

  it('deletes an environment without sessions together with its keys', async () => {
    const id = await createEnvironment(t.db);
    await issueEnvironmentKey(t.db, id, 'k', null);
    expect(await deleteEnvironment(t.db, id)).toBe('deleted');
    expect(await getEnvironment(t.db, id)).toBeNull();
    const keys = await maybeRow<{ n: number }>(
      t.db,
      sql`SELECT count(*)::int AS n FROM environment_keys WHERE environment_id = ${id}`,
    );
    expect(keys?.n).toBe(0);
    expect(await deleteEnvironment(t.db, id)).toBe('not_found');
  });

  it('keeps an environment that still has sessions, work and all', async () => {
    const target = await setupSession(t.db);
    await insertWork(t.db, target);
    expect(await deleteEnvironment(t.db, target.environmentId)).toBe('has_sessions');
    expect(await getEnvironment(t.db, target.environmentId)).not.toBeNull();
  });

  it('answers not_found for an environment that never existed', async () => {
    expect(await deleteEnvironment(t.db, UNKNOWN)).toBe('not_found');
    expect(await archiveEnvironment(t.db, UNKNOWN)).toBeNull();
  });

  it('archives once: a second archive keeps the first archived_at and updated_at', async () => {
    const id = await createEnvironment(t.db);
    const first = await archiveEnvironment(t.db, id);
    expect(first?.archivedAt).toEqual(expect.any(String));
    expect(first?.updatedAt).toBe(first?.archivedAt);
    const again = await archiveEnvironment(t.db, id);
    expect(again).toEqual(first);
  });
});

describe('deleteEnvironment racing a new session (pg)', () => {
  const t = useTestDb('pg');

  it('a session committed while the delete waits makes the delete answer has_sessions', async () => {
    const id = await createEnvironment(t.db);
    const pool = t.pool!;
    const inserter = await pool.connect();
    try {
      await inserter.query('BEGIN');
      await inserter.query('INSERT INTO sessions (id, environment_id) VALUES ($1, $2)', ['sesn_race', id]);
      // The delete blocks on the new session's key-share lock, then meets the foreign key.
      const deleting = deleteEnvironment(t.db, id);
      await untilSomeoneWaitsForALock(t.db);
      await inserter.query('COMMIT');
      expect(await deleting).toBe('has_sessions');
    } finally {
      inserter.release();
    }
    expect(await getEnvironment(t.db, id)).not.toBeNull();
  });
});
