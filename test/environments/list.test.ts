import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { SqlHandle } from '../../src/db/handle.js';
import {
  archiveEnvironment,
  createEnvironment,
  type Environment,
  type EnvironmentCursor,
  listEnvironments,
} from '../../src/environments/index.js';
import { useTestDb } from '../helpers/db.js';

/** Creates environments with the given created_at values; returns their ids in that order. */
async function environmentsAt(db: SqlHandle, createdAts: string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const at of createdAts) {
    const env = await createEnvironment(db, {
      name: at,
      description: null,
      metadata: {},
      config: { type: 'self_hosted' },
    });
    await db.execute(sql`UPDATE environments SET created_at = ${at}::timestamptz WHERE id = ${env.id}`);
    ids.push(env.id);
  }
  return ids;
}

describe.each(['pg', 'pglite'] as const)('listEnvironments (%s)', (driver) => {
  const t = useTestDb(driver);

  it('lists newest first, breaking created_at ties by id', async () => {
    const ids = await environmentsAt(t.db, [
      '2026-01-01T00:00:01Z',
      '2026-01-01T00:00:03Z',
      '2026-01-01T00:00:02Z',
    ]);
    const [tieA, tieB] = await environmentsAt(t.db, ['2026-01-01T00:00:02Z', '2026-01-01T00:00:02Z']);
    const listed = (await listEnvironments(t.db, { fetch: 10 })).map((e) => e.id);
    const tied = [ids[2]!, tieA!, tieB!].sort().reverse();
    expect(listed).toEqual([ids[1], ...tied, ids[0]]);
  });

  it('continues strictly after a cursor, so keyset pages neither overlap nor skip', async () => {
    const ids = await environmentsAt(
      t.db,
      Array.from({ length: 7 }, (_, i) => `2026-01-01T00:00:0${i}.00000${i + 1}Z`),
    );
    const seen: string[] = [];
    let after: EnvironmentCursor | null = null;
    for (let pages = 0; pages < 10; pages++) {
      const page: Environment[] = await listEnvironments(t.db, { after, fetch: 3 });
      seen.push(...page.map((e) => e.id));
      if (page.length < 3) break;
      after = { createdAt: page[2]!.createdAt, id: page[2]!.id };
    }
    expect(seen).toEqual([...ids].reverse());
  });

  it('leaves archived environments out unless asked for them', async () => {
    const [live, archived] = await environmentsAt(t.db, ['2026-01-01T00:00:01Z', '2026-01-01T00:00:02Z']);
    await archiveEnvironment(t.db, archived!);
    expect((await listEnvironments(t.db, { fetch: 10 })).map((e) => e.id)).toEqual([live]);
    expect((await listEnvironments(t.db, { fetch: 10, includeArchived: true })).map((e) => e.id)).toEqual([
      archived,
      live,
    ]);
  });
});
