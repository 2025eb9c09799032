import { describe, expect, it } from 'vitest';
import {
  archiveEnvironment,
  createEnvironment,
  getEnvironment,
  MAX_METADATA_PAIRS,
  resolveConfig,
  updateEnvironment,
} from '../../src/environments/index.js';
import { useTestDb } from '../helpers/db.js';
import { compareTimestamps } from '../helpers/factories.js';

describe.each(['pg', 'pglite'] as const)('updateEnvironment (%s)', (driver) => {
  const t = useTestDb(driver);
  const cloud = () =>
    createEnvironment(t.db, {
      name: 'before',
      description: 'words',
      metadata: { a: '1', b: '2' },
      config: resolveConfig({ type: 'cloud', packages: { npm: ['tsx'] } }),
    });

  it('changes only what the patch names, and moves updated_at forward', async () => {
    const env = await cloud();
    const outcome = await updateEnvironment(t.db, env.id, { name: 'after', metadata: { b: null, c: '3' } });
    if (!outcome.ok) throw new Error(outcome.reason);
    expect(outcome.environment).toMatchObject({
      name: 'after',
      description: 'words',
      metadata: { a: '1', c: '3' },
      config: env.config,
      createdAt: env.createdAt,
    });
    expect(await compareTimestamps(t.db, outcome.environment.updatedAt, env.updatedAt)).toBe(1);
    expect(await getEnvironment(t.db, env.id)).toEqual(outcome.environment);
  });

  it('description: null clears it and "" is stored as ""', async () => {
    const env = await cloud();
    const cleared = await updateEnvironment(t.db, env.id, { description: null });
    expect(cleared.ok && cleared.environment.description).toBeNull();
    const blank = await updateEnvironment(t.db, env.id, { description: '' });
    expect(blank.ok && blank.environment.description).toBe('');
  });

  it('a cloud config patch keeps the stored fields it leaves out', async () => {
    const env = await cloud();
    const outcome = await updateEnvironment(t.db, env.id, {
      config: { type: 'cloud', networking: { type: 'limited' } },
    });
    if (!outcome.ok) throw new Error(outcome.reason);
    expect(outcome.environment.config).toMatchObject({
      networking: { type: 'limited' },
      packages: { npm: ['tsx'] },
    });
  });

  it('refuses to change config.type and writes nothing', async () => {
    const env = await cloud();
    expect(await updateEnvironment(t.db, env.id, { name: 'x', config: { type: 'self_hosted' } })).toEqual({
      ok: false,
      reason: 'config_type_change',
    });
    expect(await getEnvironment(t.db, env.id)).toEqual(env);
  });

  it('refuses a patch that would leave more than the pair cap, counted after deletes', async () => {
    const env = await cloud();
    const add = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v']));
    // Two stored + cap − 1 new = cap + 1.
    expect(await updateEnvironment(t.db, env.id, { metadata: add(MAX_METADATA_PAIRS - 1) })).toEqual({
      ok: false,
      reason: 'too_many_metadata_keys',
    });
    expect(await getEnvironment(t.db, env.id)).toEqual(env);
    const fits = await updateEnvironment(t.db, env.id, {
      metadata: { ...add(MAX_METADATA_PAIRS - 1), a: '' },
    });
    expect(fits.ok && Object.keys(fits.environment.metadata)).toHaveLength(MAX_METADATA_PAIRS);
  });

  it('refuses an archived environment and one that does not exist', async () => {
    const env = await cloud();
    await archiveEnvironment(t.db, env.id);
    expect(await updateEnvironment(t.db, env.id, { name: 'x' })).toEqual({ ok: false, reason: 'archived' });
    expect(await updateEnvironment(t.db, 'env_0000000000000000000000zz', {})).toEqual({
      ok: false,
      reason: 'not_found',
    });
  });
});

describe('updateEnvironment under concurrency (pg)', () => {
  const t = useTestDb('pg', { poolSize: 12 });

  it('concurrent patches to different metadata keys all land', async () => {
    const env = await createEnvironment(t.db, {
      name: 'n',
      description: null,
      metadata: {},
      config: { type: 'self_hosted' },
    });
    const keys = Array.from({ length: 10 }, (_, i) => `k${i}`);
    const outcomes = await Promise.all(
      keys.map((k) => updateEnvironment(t.db, env.id, { metadata: { [k]: k } })),
    );
    expect(outcomes.every((o) => o.ok)).toBe(true);
    expect((await getEnvironment(t.db, env.id))?.metadata).toEqual(
      Object.fromEntries(keys.map((k) => [k, k])),
    );
  });
});
