/**
 * The app's memory of the configured admin key it ensured (LEASEHOLD_ADMIN_KEY where no start-up
 * ensures it): on real PostgreSQL, counting the statements each request's `ensure` sends.
 */
import { describe, expect, it } from 'vitest';
import { ConfiguredAdminKey } from '../../src/auth/configured-admin-key.js';
import { resolveCredential } from '../../src/auth/credentials.js';
import { countingDb } from '../helpers/counting-db.js';
import { useTestDb } from '../helpers/db.js';

let minted = 0;
const value = () => `lh_test_admin_memo_${++minted}_${Math.random().toString(36).slice(2)}`;

const quiet = { warn: () => {} };

describe('ConfiguredAdminKey', () => {
  const t = useTestDb('pg');

  it('ensures a value once: every later request with the same value sends no statement', async () => {
    const memo = new ConfiguredAdminKey();
    const counted = countingDb(t.db);
    const key = value();
    await memo.ensure(counted.db, key, quiet);
    const first = counted.statements;
    expect(first).toBeGreaterThan(0);
    for (let i = 0; i < 5; i++) await memo.ensure(counted.db, key, quiet);
    // The setting read again (a Worker's env may give an equal string rather than the same one).
    await memo.ensure(counted.db, [...key].join(''), quiet);
    expect(counted.statements).toBe(first);
    expect((await resolveCredential(t.db, key))?.kind).toBe('api');
  });

  it('a changed value is ensured again and retires the earlier one', async () => {
    const memo = new ConfiguredAdminKey();
    const counted = countingDb(t.db);
    const older = value();
    const newer = value();
    await memo.ensure(counted.db, older, quiet);
    const afterOlder = counted.statements;
    await memo.ensure(counted.db, newer, quiet);
    expect(counted.statements).toBeGreaterThan(afterOlder);
    expect((await resolveCredential(t.db, newer))?.kind).toBe('api');
    expect(await resolveCredential(t.db, older)).toBeNull();
  });

  it('a failed ensure is not remembered: the next request tries again', async () => {
    const memo = new ConfiguredAdminKey();
    const counted = countingDb(t.db, 1);
    const key = value();
    await expect(memo.ensure(counted.db, key, quiet)).rejects.toThrow('connection terminated');
    expect(await resolveCredential(t.db, key)).toBeNull();
    await memo.ensure(counted.db, key, quiet);
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
    const counted = countingDb(t.db);
    await memo.ensure(counted.db, older, log);
    const statements = counted.statements;
    await memo.ensure(counted.db, older, log);
    expect(counted.statements).toBe(statements);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toContain('a newer one has replaced');
    expect(await resolveCredential(t.db, older)).toBeNull();
  });
});
