/**
 * Debian's Chromium under playwright-core, as the console's end-to-end tests drive it: headless,
 * no sandbox (tests run as root), every background service off (this machine's network refuses
 * them), and a fresh profile per launch. The global setup installs Chromium where it may
 * (`prereqs.ts`); a missing one still fails the test with how to install it.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { CHROMIUM } from './prereqs.js';

/** Where screenshots go: kept after the run as test artifacts (git-ignored). */
export const ARTIFACTS = path.resolve(process.env.LEASEHOLD_ARTIFACTS ?? 'artifacts/console');

export interface Browser {
  context: BrowserContext;
  page: Page;
  /** Every URL the browser requested, in order. */
  requests: string[];
  shot(name: string): Promise<string>;
  close(): Promise<void>;
}

export async function launchBrowser(viewport = { width: 1280, height: 900 }): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is not at ${CHROMIUM}: install Debian's package (apt-get install -y chromium) or set LEASEHOLD_CHROMIUM`,
    );
  }
  const profile = await mkdtemp(path.join(tmpdir(), 'leasehold-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const requests: string[] = [];
  context.on('request', (r) => requests.push(r.url()));
  const page = context.pages()[0] ?? (await context.newPage());
  await mkdir(ARTIFACTS, { recursive: true });
  return {
    context,
    page,
    requests,
    async shot(name) {
      const file = path.join(ARTIFACTS, `${name}.png`);
      await page.screenshot({ path: file, fullPage: true });
      return file;
    },
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}
