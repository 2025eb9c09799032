import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { useTestDb } from '../helpers/db.js';
import { asAdmin, expectError } from '../helpers/management.js';

type Wire = Record<string, unknown> & {
  id: string;
  version: number;
  name: string;
  archived_at: string | null;
};
type Page = { data: Wire[]; next_page: string | null };

describe('GET /v1/agents/{id}, POST /v1/agents/{id}/archive and GET /v1/agents/{id}/versions', () => {
  const t = useTestDb('pg');
  const withVersions = async (n: number) => {
    const admin = await asAdmin(t.db);
    const agent = await admin.ok<Wire>('POST', '/v1/agents', { name: 'v1', model: 'm' });
    for (let v = 2; v <= n; v++) await admin.ok('POST', `/v1/agents/${agent.id}`, { name: `v${v}` });
    return { ...admin, id: agent.id, path: `/v1/agents/${agent.id}` };
  };

  it('retrieve answers the newest version, or the one asked for', async () => {
    const { ok, path } = await withVersions(3);
    expect(await ok('GET', path)).toMatchObject({ version: 3, name: 'v3' });
    expect(await ok('GET', `${path}?version=1`)).toMatchObject({ version: 1, name: 'v1' });
    // The SDK sends `version=` for a null param: that is no version at all.
    expect(await ok('GET', `${path}?version=`)).toMatchObject({ version: 3 });
  });

  it('retrieve: a version it does not have, an unknown or malformed id are 404s; a bad version is a 400', async () => {
    const { call, path } = await withVersions(1);
    await expectError(await call('GET', `${path}?version=2`), 404, 'not_found_error');
    await expectError(await call('GET', '/v1/agents/agent_0000000000000000000000zz'), 404, 'not_found_error');
    await expectError(await call('GET', '/v1/agents/agent_%00'), 404, 'not_found_error');
    for (const v of ['0', '-1', '1.5', 'x', '2147483648', '99999999999'])
      await expectError(await call('GET', `${path}?version=${v}`), 400, 'invalid_request_error');
  });

  it('archive sets archived_at once, writes no version and keeps the agent readable', async () => {
    const { ok, call, path } = await withVersions(2);
    const before = await ok<Wire>('GET', path);
    const archived = await ok<Wire>('POST', `${path}/archive`);
    expect(archived).toEqual({ ...before, archived_at: expect.any(String) });
    expect(await ok('POST', `${path}/archive`)).toEqual(archived);
    expect(await ok('GET', `${path}?version=1`)).toMatchObject({ archived_at: archived.archived_at });
    await expectError(
      await call('POST', '/v1/agents/agent_0000000000000000000000zz/archive'),
      404,
      'not_found_error',
    );
  });

  it('versions pages newest first with a cursor that ends on the last page', async () => {
    const { ok, path } = await withVersions(5);
    const first = await ok<Page>('GET', `${path}/versions?limit=2`);
    expect(first.data.map((a) => a.version)).toEqual([5, 4]);
    const second = await ok<Page>('GET', `${path}/versions?limit=2&page=${first.next_page}`);
    expect(second.data.map((a) => a.version)).toEqual([3, 2]);
    const last = await ok<Page>('GET', `${path}/versions?limit=2&page=${second.next_page}`);
    expect(last).toEqual({ data: [expect.objectContaining({ version: 1, name: 'v1' })], next_page: null });
    expect((await ok<Page>('GET', `${path}/versions`)).data).toHaveLength(5);
  });

  it("versions: a cursor of another agent's versions, a bad limit or an unknown agent are refused", async () => {
    const { ok, call, path } = await withVersions(3);
    const other = await ok<Wire>('POST', '/v1/agents', { name: 'o', model: 'm' });
    const page = (await ok<Page>('GET', `${path}/versions?limit=1`)).next_page;
    await expectError(
      await call('GET', `/v1/agents/${other.id}/versions?page=${page}`),
      400,
      'invalid_request_error',
    );
    await expectError(await call('GET', `${path}/versions?page=bm9wZQ`), 400, 'invalid_request_error');
    await expectError(await call('GET', `${path}/versions?limit=101`), 400, 'invalid_request_error');
    await expectError(
      await call('GET', '/v1/agents/agent_0000000000000000000000zz/versions'),
      404,
      'not_found_error',
    );
  });
});

describe('GET /v1/agents', () => {
  const t = useTestDb('pg');
  const agents = async (n: number) => {
    const admin = await asAdmin(t.db);
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const { id } = await admin.ok<Wire>('POST', '/v1/agents', { name: `a${i}`, model: 'm' });
      // One second apart, so created_at bounds can pick them out.
      await t.db.execute(
        sql`UPDATE agents SET created_at = ${`2026-01-01T00:00:0${i}Z`}::timestamptz WHERE id = ${id}`,
      );
      ids.push(id);
    }
    return { ...admin, ids };
  };

  it('pages newest first, next_page null on the last page', async () => {
    const { ok, ids } = await agents(5);
    const seen: string[] = [];
    let page: string | null = null;
    do {
      const res: Page = await ok<Page>('GET', `/v1/agents?limit=2${page ? `&page=${page}` : ''}`);
      seen.push(...res.data.map((a) => a.id));
      page = res.next_page;
    } while (page);
    expect(seen).toEqual([...ids].reverse());
  });

  it('created_at[gte] and created_at[lte] bound the list inclusively', async () => {
    const { ok, ids } = await agents(4);
    const q = `created_at%5Bgte%5D=2026-01-01T00:00:01Z&created_at%5Blte%5D=${encodeURIComponent('2026-01-01T01:00:02+01:00')}`;
    expect((await ok<Page>('GET', `/v1/agents?${q}`)).data.map((a) => a.id)).toEqual([ids[2], ids[1]]);
  });

  it('archived agents only with include_archived=true', async () => {
    const { ok, ids } = await agents(2);
    await ok('POST', `/v1/agents/${ids[0]}/archive`);
    expect((await ok<Page>('GET', '/v1/agents')).data.map((a) => a.id)).toEqual([ids[1]]);
    expect((await ok<Page>('GET', '/v1/agents?include_archived=true')).data.map((a) => a.id)).toEqual([
      ids[1],
      ids[0],
    ]);
  });

  it.each([
    ['limit=0'],
    ['limit=101'],
    ['page=garbage'],
    ['include_archived=yes'],
    ['created_at%5Bgte%5D=yesterday'],
    ['created_at%5Blte%5D=2026-13-01T00:00:00Z'],
  ])('?%s is a 400', async (query) => {
    const { call } = await asAdmin(t.db);
    await expectError(await call('GET', `/v1/agents?${query}`), 400, 'invalid_request_error');
  });

  it('an environments cursor is refused by the agents list', async () => {
    const { ok, call } = await asAdmin(t.db);
    for (let i = 0; i < 2; i++) await ok('POST', '/v1/environments', { name: `e${i}` });
    const page = (await ok<Page>('GET', '/v1/environments?limit=1')).next_page;
    await expectError(await call('GET', `/v1/agents?page=${page}`), 400, 'invalid_request_error');
  });
});
