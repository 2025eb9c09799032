import type { Hono } from 'hono';
import { drainBody, readForm } from '../api/body.js';
import type { AppEnv } from '../api/types.js';
import { signInPage } from './pages/sign-in.js';
import { assertSameOrigin, CONSOLE_BASE, signIn, signOut } from './session.js';

export function registerSignIn(app: Hono<AppEnv>): void {
  app.get(`${CONSOLE_BASE}/sign-in`, (c) => c.html(signInPage()));

  app.post(`${CONSOLE_BASE}/sign-in`, async (c) => {
    assertSameOrigin(c);
    const key = (await readForm(c)).get('key')?.trim() ?? '';
    if (key !== '' && (await signIn(c, key))) return c.redirect(CONSOLE_BASE, 303);
    return c.html(signInPage('That is not a live admin API key.'), 401);
  });

  app.post(`${CONSOLE_BASE}/sign-out`, async (c) => {
    assertSameOrigin(c);
    await drainBody(c);
    signOut(c);
    return c.redirect(`${CONSOLE_BASE}/sign-in`, 303);
  });
}
