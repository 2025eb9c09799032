import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import {
  type Agent,
  type AgentCursor,
  archiveAgent,
  createAgent,
  listAgents,
  listAgentVersions,
  updateAgent,
} from '../../src/agents/index.js';
import type { SqlHandle } from '../../src/db/handle.js';
import { newId } from '../../src/ids.js';
import { useTestDb } from '../helpers/db.js';

/** Creates agents with the given created_at values; returns their ids in that order. */
async function agentsAt(db: SqlHandle, createdAts: string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const at of createdAts) {
    const agent = await createAgent(db, { name: at, model: 'm' });
    await db.execute(sql`UPDATE agents SET created_at = ${at}::timestamptz WHERE id = ${agent.id}`);
    ids.push(agent.id);
  }
  return ids;
}

describe.each(['pg', 'pglite'] as const)('listAgents (%s)', (driver) => {
  const t = useTestDb(driver);

  it('lists newest first, breaking created_at ties by id, each agent at its newest version', async () => {
    const ids = await agentsAt(t.db, [
      '2026-01-01T00:00:01Z',
      '2026-01-01T00:00:03Z',
      '2026-01-01T00:00:02Z',
    ]);
    const [tieA, tieB] = await agentsAt(t.db, ['2026-01-01T00:00:02Z', '2026-01-01T00:00:02Z']);
    await updateAgent(t.db, ids[0]!, { name: 'renamed' });
    const listed = await listAgents(t.db, { fetch: 10 });
    const tied = [ids[2]!, tieA!, tieB!].sort().reverse();
    expect(listed.map((a) => a.id)).toEqual([ids[1], ...tied, ids[0]]);
    expect(listed.at(-1)).toMatchObject({ version: 2, definition: { name: 'renamed' } });
  });

  it('continues strictly after a cursor, so keyset pages neither overlap nor skip', async () => {
    const ids = await agentsAt(
      t.db,
      Array.from({ length: 7 }, (_, i) => `2026-01-01T00:00:0${i}.00000${i + 1}Z`),
    );
    const seen: string[] = [];
    let after: AgentCursor | null = null;
    for (let pages = 0; pages < 10; pages++) {
      const page: Agent[] = await listAgents(t.db, { after, fetch: 3 });
      seen.push(...page.map((a) => a.id));
      if (page.length < 3) break;
      after = { createdAt: page[2]!.createdAt, id: page[2]!.id };
    }
    expect(seen).toEqual([...ids].reverse());
  });

  it('leaves archived agents out unless asked for them', async () => {
    const [kept, archived] = await agentsAt(t.db, ['2026-01-01T00:00:01Z', '2026-01-01T00:00:02Z']);
    await archiveAgent(t.db, archived!);
    expect((await listAgents(t.db, { fetch: 10 })).map((a) => a.id)).toEqual([kept]);
    expect((await listAgents(t.db, { fetch: 10, includeArchived: true })).map((a) => a.id)).toEqual([
      archived,
      kept,
    ]);
  });

  it('created_at bounds are inclusive instants, in any offset', async () => {
    const ids = await agentsAt(t.db, [
      '2026-01-01T00:00:01Z',
      '2026-01-01T00:00:02Z',
      '2026-01-01T00:00:03Z',
    ]);
    const between = await listAgents(t.db, {
      fetch: 10,
      createdGte: '2026-01-01T01:00:02+01:00',
      createdLte: '2026-01-01T00:00:02.000000Z',
    });
    expect(between.map((a) => a.id)).toEqual([ids[1]]);
    expect(
      (await listAgents(t.db, { fetch: 10, createdGte: '2026-01-01T00:00:02Z' })).map((a) => a.id),
    ).toEqual([ids[2], ids[1]]);
  });
});

describe.each(['pg', 'pglite'] as const)('listAgentVersions (%s)', (driver) => {
  const t = useTestDb(driver);

  it('pages through every version newest first, each as the agent was then', async () => {
    const agent = await createAgent(t.db, { name: 'v1', model: 'm' });
    for (let v = 2; v <= 5; v++) await updateAgent(t.db, agent.id, { name: `v${v}` });
    const first = await listAgentVersions(t.db, agent.id, { fetch: 3 });
    expect(first?.map((a) => [a.version, a.definition.name])).toEqual([
      [5, 'v5'],
      [4, 'v4'],
      [3, 'v3'],
    ]);
    const rest = await listAgentVersions(t.db, agent.id, { before: 4, fetch: 3 });
    expect(rest?.map((a) => a.version)).toEqual([3, 2, 1]);
    expect(rest?.at(-1)?.updatedAt).toBe(agent.createdAt);
  });

  it('an empty page past the first version is told apart from an agent that does not exist', async () => {
    const agent = await createAgent(t.db, { name: 'v1', model: 'm' });
    expect(await listAgentVersions(t.db, agent.id, { before: 1, fetch: 3 })).toEqual([]);
    expect(await listAgentVersions(t.db, newId('agent'), { fetch: 3 })).toBeNull();
  });
});
