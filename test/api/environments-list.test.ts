import { describe, expect, it } from 'vitest';
import { useTestDb } from '../helpers/db.js';
import { type Admin, asAdmin, expectError } from '../helpers/management.js';

type Page = { data: { id: string; archived_at: string | null }[]; next_page: string | null };

describe('GET /v1/environments', () => {
  const t = useTestDb('pg');
  const setup = async (count: number) => {
    const admin = await asAdmin(t.db);
    const ids: string[] = [];
    for (let i = 0; i < count; i++)
      ids.push((await admin.ok<{ id: string }>('POST', '/v1/environments', { name: `e${i}` })).id);
    return { ...admin, newestFirst: [...ids].reverse() };
  };

  /** Follows next_page as the SDK does (reusing the query) until it is null. */
  const pages = async (ok: Admin['ok'], query: string) => {
    const out: Page[] = [];
    let page: string | null = null;
    do {
      const res: Page = await ok<Page>('GET', `/v1/environments?${query}${page ? `&page=${page}` : ''}`);
      out.push(res);
      page = res.next_page;
      if (out.length > 50) throw new Error('pagination never ended');
    } while (page);
    return out;
  };

  it('an empty list is one page with next_page null', async () => {
    const { ok } = await asAdmin(t.db);
    expect(await ok('GET', '/v1/environments')).toEqual({ data: [], next_page: null });
  });

  it.each([5, 6])(
    'pages through %i environments newest first, without overlap, ending with next_page null',
    async (n) => {
      const { ok, newestFirst } = await setup(n);
      const all = await pages(ok, 'limit=2');
      // An exactly full last page still says null: the server fetches one row more than it shows.
      expect(all).toHaveLength(Math.ceil(n / 2));
      expect(all.slice(0, -1).every((p) => p.data.length === 2 && typeof p.next_page === 'string')).toBe(
        true,
      );
      expect(all.at(-1)?.next_page).toBeNull();
      expect(all.flatMap((p) => p.data.map((e) => e.id))).toEqual(newestFirst);
    },
  );

  it('defaults to pages of 20', async () => {
    const { ok } = await setup(21);
    const first = await ok<Page>('GET', '/v1/environments');
    expect(first.data).toHaveLength(20);
    expect(first.next_page).toEqual(expect.any(String));
  });

  it('leaves archived environments out unless include_archived=true', async () => {
    const { ok, newestFirst } = await setup(3);
    await ok('POST', `/v1/environments/${newestFirst[1]}/archive`);
    const live = [newestFirst[0], newestFirst[2]];
    expect((await ok<Page>('GET', '/v1/environments')).data.map((e) => e.id)).toEqual(live);
    expect((await ok<Page>('GET', '/v1/environments?include_archived=false')).data.map((e) => e.id)).toEqual(
      live,
    );
    const withArchived = await pages(ok, 'include_archived=true&limit=1');
    expect(withArchived.flatMap((p) => p.data.map((e) => e.id))).toEqual(newestFirst);
  });

  it.each(['0', '101', '-1', '1.5', 'ten', '99999'])('refuses limit=%s with 400', async (limit) => {
    const { call } = await asAdmin(t.db);
    await expectError(await call('GET', `/v1/environments?limit=${limit}`), 400, 'invalid_request_error');
  });

  it('refuses include_archived values other than true and false', async () => {
    const { call } = await asAdmin(t.db);
    await expectError(
      await call('GET', '/v1/environments?include_archived=yes'),
      400,
      'invalid_request_error',
    );
  });

  it.each([
    ['garbage', 'not a cursor!'],
    ['base64 of junk', btoa('hello').replace(/=+$/, '')],
    ['a work-list cursor', btoa('v1|2026-01-01T00:00:00Z|work_0000000000000000000000zz').replace(/=+$/, '')],
    ['a cursor with a bad time', btoa('env1|yesterday|env_0000000000000000000000zz').replace(/=+$/, '')],
  ])('refuses %s as a page cursor with 400', async (_, page) => {
    const { call } = await asAdmin(t.db);
    await expectError(
      await call('GET', `/v1/environments?page=${encodeURIComponent(page)}`),
      400,
      'invalid_request_error',
    );
  });
});
