import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import {
  AgentArchivedError,
  AgentDefinitionError,
  AgentVersionConflictError,
  archiveAgent,
  createAgent,
  getAgent,
  updateAgent,
} from '../../src/agents/index.js';
import { maybeRow } from '../../src/db/handle.js';
import { newId } from '../../src/ids.js';
import { useTestDb } from '../helpers/db.js';
import { compareTimestamps } from '../helpers/factories.js';

describe.each(['pg', 'pglite'] as const)('updateAgent (%s)', (driver) => {
  const t = useTestDb(driver);
  const agent = () =>
    createAgent(t.db, { name: 'before', model: 'm', description: 'd', metadata: { a: '1' } });
  const versions = async (id: string) =>
    (await maybeRow<{ n: number }>(
      t.db,
      sql`SELECT count(*)::int AS n FROM agent_versions WHERE agent_id = ${id}`,
    ))!.n;

  it('writes the change as version 2, keeping version 1 as it was', async () => {
    const v1 = await agent();
    const v2 = await updateAgent(t.db, v1.id, { name: 'after', metadata: { b: '2' } });
    expect(v2).toMatchObject({
      id: v1.id,
      version: 2,
      createdAt: v1.createdAt,
      definition: { ...v1.definition, name: 'after', metadata: { a: '1', b: '2' } },
    });
    expect(await compareTimestamps(t.db, v2!.updatedAt, v1.updatedAt)).toBe(1);
    expect(await getAgent(t.db, v1.id)).toEqual(v2);
    expect(await getAgent(t.db, v1.id, 1)).toEqual(v1);
  });

  it('a patch that changes nothing writes no version and answers the agent as it is', async () => {
    const v1 = await agent();
    for (const patch of [
      {},
      { name: 'before' },
      { metadata: { a: '1' } },
      { description: 'd', model: 'm' },
    ]) {
      expect(await updateAgent(t.db, v1.id, patch)).toEqual(v1);
    }
    expect(await versions(v1.id)).toBe(1);
  });

  it('with a version, applies only to that version and otherwise refuses, writing nothing', async () => {
    const v1 = await agent();
    const v2 = await updateAgent(t.db, v1.id, { name: 'two' }, 1);
    expect(v2?.version).toBe(2);
    const stale = updateAgent(t.db, v1.id, { name: 'three' }, 1);
    await expect(stale).rejects.toBeInstanceOf(AgentVersionConflictError);
    await expect(stale).rejects.toMatchObject({ expected: 1, current: 2 });
    expect(await getAgent(t.db, v1.id)).toEqual(v2);
    // Even a patch that would change nothing is refused when its version is stale.
    await expect(updateAgent(t.db, v1.id, {}, 1)).rejects.toBeInstanceOf(AgentVersionConflictError);
  });

  it('refuses an archived agent, and answers null for one that does not exist', async () => {
    const v1 = await agent();
    await archiveAgent(t.db, v1.id);
    await expect(updateAgent(t.db, v1.id, { name: 'x' })).rejects.toBeInstanceOf(AgentArchivedError);
    expect(await versions(v1.id)).toBe(1);
    expect(await updateAgent(t.db, newId('agent'), { name: 'x' })).toBeNull();
  });

  it('refuses a patch that would leave more than 16 metadata keys, writing nothing', async () => {
    const v1 = await agent();
    const many = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, 'v']));
    await expect(updateAgent(t.db, v1.id, { metadata: many })).rejects.toBeInstanceOf(AgentDefinitionError);
    expect(await getAgent(t.db, v1.id)).toEqual(v1);
  });
});

describe('updateAgent under concurrency (pg, real connections)', () => {
  const t = useTestDb('pg', { poolSize: 12 });

  it('concurrent unconditional updates each land as their own version, none lost', async () => {
    const v1 = await createAgent(t.db, { name: 'n', model: 'm' });
    const keys = Array.from({ length: 10 }, (_, i) => `k${i}`);
    const answers = await Promise.all(keys.map((k) => updateAgent(t.db, v1.id, { metadata: { [k]: k } })));
    expect(answers.map((a) => a!.version).sort((x, y) => x - y)).toEqual(keys.map((_, i) => i + 2));
    const newest = await getAgent(t.db, v1.id);
    expect(newest?.version).toBe(keys.length + 1);
    expect(newest?.definition.metadata).toEqual(Object.fromEntries(keys.map((k) => [k, k])));
    const stored = await maybeRow<{ n: number; max: number }>(
      t.db,
      sql`SELECT count(*)::int AS n, max(version) AS max FROM agent_versions WHERE agent_id = ${v1.id}`,
    );
    expect(stored).toEqual({ n: keys.length + 1, max: keys.length + 1 });
  });

  it('of concurrent updates from the same version, exactly one lands and the rest conflict', async () => {
    const v1 = await createAgent(t.db, { name: 'n', model: 'm' });
    const settled = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => updateAgent(t.db, v1.id, { name: `writer ${i}` }, 1)),
    );
    const landed = settled.filter((s) => s.status === 'fulfilled');
    const refused = settled.filter((s) => s.status === 'rejected');
    expect(landed).toHaveLength(1);
    for (const r of refused) expect(r.reason).toBeInstanceOf(AgentVersionConflictError);
    const newest = await getAgent(t.db, v1.id);
    expect(newest).toEqual((landed[0] as PromiseFulfilledResult<unknown>).value);
    expect(newest?.version).toBe(2);
  });
});
