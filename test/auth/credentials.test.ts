import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import {
  ensureConfiguredAdminKey,
  issueApiKey,
  resolveCredential,
  revokeApiKey,
} from '../../src/auth/credentials.js';
import { hashSecret } from '../../src/auth/secrets.js';
import { connectPg } from '../../src/db/drivers/node-pg.js';
import { maybeRow } from '../../src/db/handle.js';
import { useTestDb } from '../helpers/db.js';

let minted = 0;
const value = () => `lh_test_admin_configured_${++minted}_${Math.random().toString(36).slice(2)}`;

describe.each(['pg', 'pglite'] as const)('ensureConfiguredAdminKey (%s)', (driver) => {
  const t = useTestDb(driver);

  const live = async (secret: string) => (await resolveCredential(t.db, secret))?.kind === 'api';
  const row = async (secret: string) =>
    maybeRow<{ id: string; revoked: boolean }>(
      t.db,
      sql`SELECT id, revoked_at IS NOT NULL AS revoked FROM api_keys WHERE key_hash = ${await hashSecret(secret)}`,
    );

  it('a new value becomes a live admin key and retires the keys of earlier values', async () => {
    const first = value();
    const second = value();
    expect(await ensureConfiguredAdminKey(t.db, first)).toBe(true);
    expect(await live(first)).toBe(true);
    expect(await ensureConfiguredAdminKey(t.db, second)).toBe(true);
    expect(await live(second)).toBe(true);
    expect(await live(first)).toBe(false);
    // Ensuring the current value again changes nothing.
    expect(await ensureConfiguredAdminKey(t.db, second)).toBe(true);
    expect(await live(second)).toBe(true);
    expect(await live(first)).toBe(false);
  });

  it('a replaced value ensured again (a replica or isolate not yet redeployed) stays revoked and takes nothing back', async () => {
    const older = value();
    const newer = value();
    await ensureConfiguredAdminKey(t.db, older);
    await ensureConfiguredAdminKey(t.db, newer);
    // Both versions keep starting while a rotation rolls out: the key must not flip between them.
    for (let i = 0; i < 3; i++) {
      expect(await ensureConfiguredAdminKey(t.db, older), 'the older value is reported replaced').toBe(false);
      expect(await live(older)).toBe(false);
      expect(await live(newer)).toBe(true);
      expect(await ensureConfiguredAdminKey(t.db, newer)).toBe(true);
      expect(await live(newer)).toBe(true);
    }
  });

  it('the newest value revoked through the API is live again when it is ensured (how a lost admin key comes back)', async () => {
    const older = value();
    const newest = value();
    await ensureConfiguredAdminKey(t.db, older);
    await ensureConfiguredAdminKey(t.db, newest);
    expect(await revokeApiKey(t.db, (await row(newest))!.id)).toBe(true);
    expect(await live(newest)).toBe(false);
    expect(await ensureConfiguredAdminKey(t.db, newest)).toBe(true);
    expect(await live(newest)).toBe(true);
    expect(await live(older)).toBe(false);
  });

  it('keys issued through the API are never retired by a configured value', async () => {
    const issued = await issueApiKey(t.db, 'issued', 'admin', null);
    expect(issued.scope).toBe('admin');
    await ensureConfiguredAdminKey(t.db, value());
    await ensureConfiguredAdminKey(t.db, value());
    expect(await live(issued.key)).toBe(true);
  });
});

describe('ensureConfiguredAdminKey under concurrent starts (pg)', () => {
  const t = useTestDb('pg');

  it('replicas with the old and the new value starting at once, on their own connections, leave the newer value live and the older revoked', async () => {
    const older = value();
    const newer = value();
    await ensureConfiguredAdminKey(t.db, older);
    await ensureConfiguredAdminKey(t.db, newer);
    const replicas = Array.from({ length: 8 }, () => connectPg(t.url!, { max: 1 }));
    try {
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          ensureConfiguredAdminKey(replicas[i % replicas.length]!.db, i % 2 ? newer : older),
        ),
      );
      expect(answers.filter((a, i) => (i % 2 ? !a : a))).toEqual([]);
    } finally {
      await Promise.all(replicas.map((r) => r.close()));
    }
    expect((await resolveCredential(t.db, newer))?.kind).toBe('api');
    expect(await resolveCredential(t.db, older)).toBeNull();
  });
});
