import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without type declarations
import { ASSET_DIR, GENERATED, renderAssets, writtenAssets } from '../../scripts/console-assets.mjs';
import { createApp } from '../../src/api/app.js';
import { registerConsole } from '../../src/console/index.js';
import { environmentWithKey, testApi } from '../helpers/api.js';
import { consoleSession } from '../helpers/console.js';
import { useTestDb } from '../helpers/db.js';

/** Every `<script src>` and `<link rel="stylesheet" href>` of a page, with the type it must be. */
function assetRefs(page: string): { path: string; type: string }[] {
  const scripts = [...page.matchAll(/<script src="([^"]+)"/g)].map((m) => ({
    path: m[1]!,
    type: 'text/javascript',
  }));
  const styles = [...page.matchAll(/<link rel="stylesheet" href="([^"]+)"/g)].map((m) => ({
    path: m[1]!,
    type: 'text/css',
  }));
  return [...scripts, ...styles];
}

describe('console assets', () => {
  const t = useTestDb('pglite');

  it('every script and stylesheet a page references answers 200 with its content type and an immutable cache', async () => {
    const { environmentId } = await environmentWithKey(t.db);
    const s = await consoleSession(t.db);
    const anon = testApi(t.db).app;
    const refs = new Map<string, string>();
    for (const res of [
      await anon.request('/console/sign-in'),
      await s.page(`/console/environments/${environmentId}`),
    ])
      for (const ref of assetRefs(await res.text())) refs.set(ref.path, ref.type);
    expect(refs.size).toBe(4);
    for (const [path, type] of refs) {
      expect(path).toMatch(/^\/console\/assets\/[a-z]+-[0-9a-f]{12}\.(js|css)$/);
      // No cookie: assets are public.
      const res = await anon.request(path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type'), path).toContain(type);
      expect(res.headers.get('cache-control'), path).toContain('immutable');
      expect((await res.text()).length, path).toBeGreaterThan(0);
    }
  });

  it('an unknown asset, or __proto__, is a 404', async () => {
    const { app } = testApi(t.db);
    for (const file of ['nothing.js', 'console-00000000.js', '__proto__', 'constructor', 'toString'])
      expect((await app.request(`/console/assets/${file}`)).status, file).toBe(404);
  });

  it('src/console/assets.generated.ts and assets/console/assets/ are what scripts/console-assets.mjs renders now, with no stray file', () => {
    const { module, files } = (renderAssets as () => { module: string; files: Map<string, string> })();
    const current = readFileSync(GENERATED as string, 'utf8');
    expect(current === module, 'run npm run console:assets').toBe(true);
    expect((writtenAssets as () => string[])(), 'run npm run console:assets').toEqual(
      [...files.keys()].sort(),
    );
    for (const [file, text] of files)
      expect(
        readFileSync(path.join(ASSET_DIR as string, file), 'utf8') === text,
        `${file}: run npm run console:assets`,
      ).toBe(true);
  });

  it('the app serves no asset of its own: without static files a page still links them, and they are 404', async () => {
    const bare = createApp({ db: t.db }, { console: registerConsole });
    const page = await (await bare.request('/console/sign-in')).text();
    const refs = assetRefs(page);
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) expect((await bare.request(ref.path)).status, ref.path).toBe(404);
  });
});
