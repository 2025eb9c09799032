import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { AgentDefinitionError, createAgent, getAgent } from '../../src/agents/index.js';
import { rows } from '../../src/db/handle.js';
import { newId } from '../../src/ids.js';
import { useTestDb } from '../helpers/db.js';
import { WIRE_STAMP } from '../helpers/management.js';

describe.each(['pg', 'pglite'] as const)('createAgent and getAgent (%s)', (driver) => {
  const t = useTestDb(driver);

  it('writes the agent row and version 1 together, and reads back exactly what it answered', async () => {
    const created = await createAgent(t.db, {
      name: 'coder',
      model: 'claude-opus-4-8',
      system: 'Write code.',
      tools: [{ type: 'agent_toolset_20260401' }],
      metadata: { team: 'infra' },
    });
    expect(created).toMatchObject({
      id: expect.stringMatching(/^agent_[0-9a-z]{24}$/),
      version: 1,
      archivedAt: null,
      definition: {
        name: 'coder',
        model: { id: 'claude-opus-4-8', speed: 'standard' },
        metadata: { team: 'infra' },
      },
    });
    expect(created.createdAt).toMatch(WIRE_STAMP);
    expect(created.updatedAt).toBe(created.createdAt);
    expect(await getAgent(t.db, created.id)).toEqual(created);
    expect(await getAgent(t.db, created.id, 1)).toEqual(created);
    const stored = await rows<{ version: number; agent_version: number; definition: unknown }>(
      t.db,
      sql`SELECT a.version AS agent_version, v.version, v.definition
            FROM agents a JOIN agent_versions v ON v.agent_id = a.id WHERE a.id = ${created.id}`,
    );
    expect(stored).toEqual([{ agent_version: 1, version: 1, definition: created.definition }]);
  });

  it('a definition it cannot run is refused before anything is written', async () => {
    await expect(
      createAgent(t.db, {
        name: 'x',
        model: 'm',
        tools: [{ type: 'agent_toolset_20260401' }, { type: 'agent_toolset_20260401' }],
      }),
    ).rejects.toBeInstanceOf(AgentDefinitionError);
    expect(await rows(t.db, sql`SELECT 1 FROM agents UNION ALL SELECT 1 FROM agent_versions`)).toEqual([]);
  });

  it('get answers null for an agent that does not exist and for a version it does not have', async () => {
    const created = await createAgent(t.db, { name: 'x', model: 'm' });
    expect(await getAgent(t.db, newId('agent'))).toBeNull();
    expect(await getAgent(t.db, created.id, 2)).toBeNull();
  });
});
