import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { maybeRow } from '../../src/db/handle.js';
import { createEnvironment, getEnvironment, resolveConfig } from '../../src/environments/index.js';
import { useTestDb } from '../helpers/db.js';
import { WIRE_STAMP } from '../helpers/management.js';

describe.each(['pg', 'pglite'] as const)('createEnvironment and getEnvironment (%s)', (driver) => {
  const t = useTestDb(driver);

  it('stores the environment with its kind taken from the config, and reads it back identically', async () => {
    const created = await createEnvironment(t.db, {
      name: 'builders',
      description: 'CI workers',
      metadata: { team: 'infra' },
      config: { type: 'self_hosted' },
    });
    expect(created).toMatchObject({
      id: expect.stringMatching(/^env_[0-9a-z]{24}$/),
      kind: 'self_hosted',
      name: 'builders',
      description: 'CI workers',
      metadata: { team: 'infra' },
      config: { type: 'self_hosted' },
      archivedAt: null,
    });
    expect(created.createdAt).toMatch(WIRE_STAMP);
    expect(created.updatedAt).toBe(created.createdAt);
    expect(await getEnvironment(t.db, created.id)).toEqual(created);
    const row = await maybeRow<{ kind: string }>(
      t.db,
      sql`SELECT kind FROM environments WHERE id = ${created.id}`,
    );
    expect(row?.kind).toBe('self_hosted');
  });

  it('a cloud config is stored whole, as the wire renders it', async () => {
    const config = resolveConfig({ type: 'cloud', packages: { pip: ['numpy==2.0'] } });
    const created = await createEnvironment(t.db, {
      name: 'sandbox',
      description: null,
      metadata: {},
      config,
    });
    expect(created.kind).toBe('cloud');
    expect((await getEnvironment(t.db, created.id))?.config).toEqual(config);
  });

  it('get answers null for an id that names nothing', async () => {
    expect(await getEnvironment(t.db, 'env_0000000000000000000000zz')).toBeNull();
  });
});
