import type { Hono } from 'hono';
import { openApiDocument } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';

/** GET /openapi.json — the OpenAPI 3.1 document of every route; no credentials needed. */
export function registerOpenApi(app: Hono<AppEnv>): void {
  app.get('/openapi.json', (c) => reply(c, openApiDocument()));
}
