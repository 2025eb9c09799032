import { describe, expect, it } from 'vitest';
import { enqueue, getWork, updateMetadata, WorkNotFoundError } from '../../src/queue/index.js';
import { useTestDb } from '../helpers/db.js';
import { readWork, setupSession, type WireStage, wireWork } from '../helpers/factories.js';

describe.each(['pg', 'pglite'] as const)('updateMetadata (%s)', (driver) => {
  const t = useTestDb(driver);

  it('upserts keys and returns the whole item with its lifecycle unchanged', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'active');
    const before = await getWork(t.db, target.environmentId, id);
    const work = await updateMetadata(t.db, target.environmentId, id, { a: '1', b: '2' }, []);
    expect(work).toEqual({ ...before, metadata: { a: '1', b: '2' } });
    expect((await readWork(t.db, id))!.metadata).toEqual({ a: '1', b: '2' });
  });

  it('overwrites, deletes and adds in one patch, preserving keys it does not name', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'reserved', { metadata: { a: '1', b: '2', keep: 'k' } });
    const work = await updateMetadata(t.db, target.environmentId, id, { a: '9', c: '3' }, ['b']);
    expect(work.metadata).toEqual({ a: '9', c: '3', keep: 'k' });
  });

  it('keeps an empty string as a value, not a delete', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'reserved', { metadata: { c: '3' } });
    const work = await updateMetadata(t.db, target.environmentId, id, { c: '' }, []);
    expect(work.metadata).toEqual({ c: '' });
  });

  it('an empty patch changes nothing, and deleting an absent key is a no-op', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'reserved', { metadata: { a: '1' } });
    expect((await updateMetadata(t.db, target.environmentId, id, {}, [])).metadata).toEqual({ a: '1' });
    expect((await updateMetadata(t.db, target.environmentId, id, {}, ['missing'])).metadata).toEqual({
      a: '1',
    });
    expect((await updateMetadata(t.db, target.environmentId, id, {}, ['a'])).metadata).toEqual({});
  });

  it('stores keys and values verbatim: quotes, backslashes, JSON-looking text, non-ASCII', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'queued');
    const patch = {
      'quote"key': 'it\'s "quoted"',
      'back\\slash': 'C:\\path\\n',
      json: '{"a":1}',
      null: 'null',
      emoji: 'héllo 👋 世界',
      'a,b': '{x,y}',
    };
    const work = await updateMetadata(t.db, target.environmentId, id, patch, []);
    expect(work.metadata).toEqual(patch);
    const deleted = await updateMetadata(t.db, target.environmentId, id, {}, [
      'quote"key',
      'a,b',
      'back\\slash',
    ]);
    expect(deleted.metadata).toEqual({ json: '{"a":1}', null: 'null', emoji: 'héllo 👋 世界' });
  });

  it('applies no caps on the number of pairs or their lengths', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'queued');
    const patch = Object.fromEntries(
      Array.from({ length: 200 }, (_, i) => [`k${i}-${'x'.repeat(100)}`, 'v'.repeat(2_000)]),
    );
    const work = await updateMetadata(t.db, target.environmentId, id, patch, []);
    expect(work.metadata).toEqual(patch);
  });

  it.each(['queued', 'reserved', 'starting', 'active', 'stopping', 'stopped'] as WireStage[])(
    'patches an item in any state (%s) without touching its lifecycle',
    async (stage) => {
      const target = await setupSession(t.db);
      const { id } = await wireWork(t.db, target, stage);
      const before = await readWork(t.db, id);
      const work = await updateMetadata(t.db, target.environmentId, id, { note: stage }, []);
      expect(await readWork(t.db, id)).toEqual({ ...before, metadata: { note: stage } });
      expect(work.metadata).toEqual({ note: stage });
    },
  );

  it('an unknown, foreign-environment, model_turn or cloud tool_exec id is not found and left unpatched', async () => {
    const target = await setupSession(t.db);
    const other = await setupSession(t.db);
    const cloud = await setupSession(t.db, 'cloud');
    const { id } = await wireWork(t.db, target, 'reserved');
    const { work: turn } = await enqueue(t.db, { ...target, kind: 'model_turn' });
    const { work: tool } = await enqueue(t.db, { ...cloud, kind: 'tool_exec' });
    const cases: [string, string][] = [
      [target.environmentId, 'work_missing'],
      [other.environmentId, id],
      [target.environmentId, turn.id],
      [cloud.environmentId, tool.id],
    ];
    for (const [environmentId, workId] of cases) {
      await expect(updateMetadata(t.db, environmentId, workId, { a: '1' }, [])).rejects.toThrow(
        WorkNotFoundError,
      );
    }
    for (const workId of [id, turn.id, tool.id]) expect((await readWork(t.db, workId))!.metadata).toEqual({});
  });
});

describe('updateMetadata on real PostgreSQL connections', () => {
  const t = useTestDb('pg', { poolSize: 20 });

  it('concurrent patches of different keys all land', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'active', { metadata: { base: '0' } });
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        updateMetadata(t.db, target.environmentId, id, { [`k${i}`]: `${i}` }, []),
      ),
    );
    const expected = Object.fromEntries([
      ['base', '0'],
      ...Array.from({ length: 12 }, (_, i) => [`k${i}`, `${i}`]),
    ]);
    expect((await readWork(t.db, id))!.metadata).toEqual(expected);
  });

  it('a patch and a delete racing on different keys both land', async () => {
    const target = await setupSession(t.db);
    const { id } = await wireWork(t.db, target, 'active', { metadata: { gone: 'x', stay: 'y' } });
    await Promise.all([
      updateMetadata(t.db, target.environmentId, id, { added: 'z' }, []),
      updateMetadata(t.db, target.environmentId, id, {}, ['gone']),
    ]);
    expect((await readWork(t.db, id))!.metadata).toEqual({ stay: 'y', added: 'z' });
  });
});
