/**
 * The management API (admin API keys only): environments, environment keys and API keys.
 * One endpoint per file. Literal segments (`archive`, `keys`) never collide with `{id}`:
 * every path here differs from the others in its number of segments or its method.
 */
import type { Hono } from 'hono';
import type { AppEnv } from '../types.js';
import { registerApiKeysCreate } from './api-keys-create.js';
import { registerApiKeysList } from './api-keys-list.js';
import { registerApiKeysRevoke } from './api-keys-revoke.js';
import { registerEnvironmentKeysCreate } from './environment-keys-create.js';
import { registerEnvironmentKeysList } from './environment-keys-list.js';
import { registerEnvironmentKeysRevoke } from './environment-keys-revoke.js';
import { registerEnvironmentsArchive } from './environments-archive.js';
import { registerEnvironmentsCreate } from './environments-create.js';
import { registerEnvironmentsDelete } from './environments-delete.js';
import { registerEnvironmentsGet } from './environments-get.js';
import { registerEnvironmentsList } from './environments-list.js';
import { registerEnvironmentsUpdate } from './environments-update.js';

export function registerManagement(app: Hono<AppEnv>): void {
  registerEnvironmentsCreate(app);
  registerEnvironmentsList(app);
  registerEnvironmentsGet(app);
  registerEnvironmentsUpdate(app);
  registerEnvironmentsDelete(app);
  registerEnvironmentsArchive(app);
  registerEnvironmentKeysCreate(app);
  registerEnvironmentKeysList(app);
  registerEnvironmentKeysRevoke(app);
  registerApiKeysCreate(app);
  registerApiKeysList(app);
  registerApiKeysRevoke(app);
}
