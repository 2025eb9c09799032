/**
 * The sessions API, as the SDK's `client.beta.sessions.*` calls it: sessions (create, list,
 * retrieve, update, archive, delete) and their events (list, send, stream). Literal paths
 * register before `{sessionId}`.
 */
import type { Hono } from 'hono';
import type { AppEnv } from '../types.js';
import { registerSessionEventsList } from './session-events-list.js';
import { registerSessionEventsSend } from './session-events-send.js';
import { registerSessionEventsStream } from './session-events-stream.js';
import { registerSessionsArchive } from './sessions-archive.js';
import { registerSessionsCreate } from './sessions-create.js';
import { registerSessionsDelete } from './sessions-delete.js';
import { registerSessionsGet } from './sessions-get.js';
import { registerSessionsList } from './sessions-list.js';
import { registerSessionsUpdate } from './sessions-update.js';

export function registerSessions(app: Hono<AppEnv>): void {
  registerSessionsCreate(app);
  registerSessionsList(app);
  registerSessionEventsStream(app);
  registerSessionEventsList(app);
  registerSessionEventsSend(app);
  registerSessionsArchive(app);
  registerSessionsGet(app);
  registerSessionsUpdate(app);
  registerSessionsDelete(app);
}
