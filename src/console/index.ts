/**
 * The operator console at /console: server-rendered pages, one small script, and the uPlot
 * chart, all served by the app itself (Node and Workers alike). Pages are for an admin API
 * key; see `session.ts` for how the browser keeps it.
 */
import type { Hono } from 'hono';
import { notFound } from '../api/errors.js';
import type { AppEnv } from '../api/types.js';
import { registerConsoleAssets } from './assets.js';
import { operator } from './context.js';
import { consoleGate } from './gate.js';
import { registerLive } from './live.js';
import { registerEnvironmentRoute } from './routes/environment.js';
import { registerEnvironmentsRoute } from './routes/environments.js';
import { registerJournalRunRoute } from './routes/journal-run.js';
import { registerJournalStepRoute } from './routes/journal-step.js';
import { registerKeyCreate } from './routes/key-create.js';
import { registerKeyRevoke } from './routes/key-revoke.js';
import { registerSessionRoute } from './routes/session.js';
import { registerSessionCancel } from './routes/session-cancel.js';
import { registerWorkItemRoute } from './routes/work-item.js';
import { registerWorkStop } from './routes/work-stop.js';
import { CONSOLE_BASE } from './session.js';
import { registerSignIn } from './sign-in.js';

/** The console's script and styles are static files (assets/), served before any of this. */
export function registerConsole(app: Hono<AppEnv>): void {
  app.use(CONSOLE_BASE, consoleGate());
  app.use(`${CONSOLE_BASE}/*`, consoleGate());
  registerConsoleAssets(app);
  registerSignIn(app);
  // The pages, one per file in routes/: each reads through the API where the API has the
  // answer, and through the queue's operator reads (both lanes, by id) where only an operator
  // may look.
  registerEnvironmentsRoute(app);
  registerEnvironmentRoute(app);
  registerWorkItemRoute(app);
  registerJournalRunRoute(app);
  registerJournalStepRoute(app);
  registerSessionRoute(app);
  // The actions, one per file: a page that asks, and a POST that does it (routes/ask.ts).
  registerWorkStop(app);
  registerSessionCancel(app);
  registerKeyCreate(app);
  registerKeyRevoke(app);
  registerLive(app);
  // Unknown console paths get the console's own not-found page, not the API's JSON, and only
  // after sign-in, as the API's fallbacks answer only after authentication.
  app.all(`${CONSOLE_BASE}/*`, async (c) => {
    await operator(app, c);
    throw notFound('no such console page');
  });
}
