/**
 * The app's memory of the configured admin key it ensured (LEASEHOLD_ADMIN_KEY where no start-up
 * ensures it): on real PostgreSQL, counting the statements each request's `ensure` sends.
 */
import type { SQL } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { ConfiguredAdminKey } from '../../src/auth/configured-admin-key.js';
import { resolveCredential } from '../../src/auth/credentials.js';
import type { SqlHandle } from '../../src/db/handle.js';
import { useTestDb } from '../helpers/db.js';

let minted = 0;
const value = () => `lh_test_admin_memo_${++minted}_${Math.random().toString(36).slice(2)}`;

/** The test database, counting statements; the first `failures` of them fail as a dropped connection would. */
function counting(db: SqlHandle, failures = 0) {
  const handle = {
    statements: 0,
    execute(query: SQL) {
      handle.statements++;
      if (failures > 0) {
        failures--;
        return Promise.reject(new Error('connection terminated'));
      }
      return db.execute(query);
    },
  };
  return handle;
}

const quiet = { warn: () => {} };

describe('ConfiguredAdminKey', () => {
  const t = useTestDb('pg');

  it('ensures a value once: every later request with the same value sends no statement', async () => {
    const memo = new ConfiguredAdminKey();
    const db = counting(t.db);
    const key = value();
    await memo.ensure(db, key, quiet);
    const first = db.statements;
    expect(first).toBeGreaterThan(0);
    for (let i = 0; i < 5; i++) await memo.ensure(db, key, quiet);
    // The setting read again (a Worker's env may give an equal string rather than the same one).
    await memo.ensure(db, [...key].join(''), quiet);
    expect(db.statements).toBe(first);
    expect((await resolveCredential(t.db, key))?.kind).toBe('api');
  });

  it('a changed value is ensured again and retires the earlier one', async () => {
    const memo = new ConfiguredAdminKey();
    const db = counting(t.db);
    const older = value();
    const newer = value();
    await memo.ensure(db, older, quiet);
    const afterOlder = db.statements;
    await memo.ensure(db, newer, quiet);
    expect(db.statements).toBeGreaterThan(afterOlder);
    expect((await resolveCredential(t.db, newer))?.kind).toBe('api');
    expect(await resolveCredential(t.db, older)).toBeNull();
  });

  it('a failed ensure is not remembered: the next request tries again', async () => {
    const memo = new ConfiguredAdminKey();
    const db = counting(t.db, 1);
    const key = value();
    await expect(memo.ensure(db, key, quiet)).rejects.toThrow('connection terminated');
    expect(await resolveCredential(t.db, key)).toBeNull();
    await memo.ensure(db, key, quiet);
    expect((await resolveCredential(t.db, key))?.kind).toBe('api');
  });

  it('a replaced value is remembered like any other and says so once, when it is ensured', async () => {
    const older = value();
    const newer = value();
    await new ConfiguredAdminKey().ensure(t.db, older, quiet);
    await new ConfiguredAdminKey().ensure(t.db, newer, quiet);
    const warned: string[] = [];
    const log = { warn: (m: string) => warned.push(m) };
    const memo = new ConfiguredAdminKey();
    const db = counting(t.db);
    await memo.ensure(db, older, log);
    const statements = db.statements;
    await memo.ensure(db, older, log);
    expect(db.statements).toBe(statements);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toContain('a newer one has replaced');
    expect(await resolveCredential(t.db, older)).toBeNull();
  });
});
