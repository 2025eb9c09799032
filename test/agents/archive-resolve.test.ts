import { describe, expect, it } from 'vitest';
import {
  AgentArchivedError,
  archiveAgent,
  createAgent,
  getAgent,
  resolveAgent,
  updateAgent,
} from '../../src/agents/index.js';
import { newId } from '../../src/ids.js';
import { useTestDb } from '../helpers/db.js';

describe.each(['pg', 'pglite'] as const)('archiveAgent (%s)', (driver) => {
  const t = useTestDb(driver);

  it('sets archived_at once, writing no version and leaving updated_at', async () => {
    const v1 = await createAgent(t.db, { name: 'a', model: 'm' });
    const archived = await archiveAgent(t.db, v1.id);
    expect(archived).toEqual({ ...v1, archivedAt: expect.any(String) });
    expect(await archiveAgent(t.db, v1.id)).toEqual(archived);
    expect(await getAgent(t.db, v1.id)).toEqual(archived);
  });

  it('answers null for an agent that does not exist', async () => {
    expect(await archiveAgent(t.db, newId('agent'))).toBeNull();
  });
});

describe.each(['pg', 'pglite'] as const)('resolveAgent (%s)', (driver) => {
  const t = useTestDb(driver);

  it('answers the newest version as the session agent snapshot: identity and definition, no metadata or times', async () => {
    const v1 = await createAgent(t.db, {
      name: 'a',
      model: { id: 'm', effort: 'high' },
      system: 's',
      tools: [{ type: 'agent_toolset_20260401' }],
      metadata: { secret: 'not for sessions' },
    });
    const v2 = await updateAgent(t.db, v1.id, { system: 's2' });
    const { metadata: _, ...definition } = v2!.definition;
    expect(await resolveAgent(t.db, { id: v1.id })).toEqual({
      id: v1.id,
      type: 'agent',
      version: 2,
      ...definition,
    });
    expect(Object.keys((await resolveAgent(t.db, { id: v1.id }))!).sort()).toEqual(
      [
        'description',
        'execution_identity',
        'id',
        'mcp_servers',
        'model',
        'multiagent',
        'name',
        'skills',
        'system',
        'tools',
        'type',
        'version',
      ].sort(),
    );
  });

  it('pins the version asked for, which later updates do not change', async () => {
    const v1 = await createAgent(t.db, { name: 'a', model: 'm', system: 'one' });
    await updateAgent(t.db, v1.id, { system: 'two' });
    expect(await resolveAgent(t.db, { id: v1.id, version: 1 })).toMatchObject({ version: 1, system: 'one' });
  });

  it('null for a missing agent, a missing version or an id it never minted, without asking SQL for the last', async () => {
    const v1 = await createAgent(t.db, { name: 'a', model: 'm' });
    expect(await resolveAgent(t.db, { id: newId('agent') })).toBeNull();
    expect(await resolveAgent(t.db, { id: v1.id, version: 2 })).toBeNull();
    for (const version of [0, -1, 1.5, 2 ** 31])
      expect(await resolveAgent(t.db, { id: v1.id, version })).toBeNull();
    for (const id of ['', 'agent_x', 'a\u0000b', v1.id.toUpperCase()])
      expect(await resolveAgent(t.db, { id })).toBeNull();
  });

  it('refuses an archived agent, whichever version is asked for', async () => {
    const v1 = await createAgent(t.db, { name: 'a', model: 'm' });
    await archiveAgent(t.db, v1.id);
    await expect(resolveAgent(t.db, { id: v1.id })).rejects.toBeInstanceOf(AgentArchivedError);
    await expect(resolveAgent(t.db, { id: v1.id, version: 1 })).rejects.toMatchObject({ agentId: v1.id });
  });
});
