import type { Hono } from 'hono';
import type { OpenApiDocument } from '../openapi.js';
import type { AppEnv } from '../types.js';

/**
 * GET /openapi.json — the OpenAPI 3.1 document of every route, built ahead of time
 * (assets/openapi.json) and handed to the app by its host; no credentials needed. Serialized
 * once: the document cannot change while the process runs.
 */
export function registerOpenApi(app: Hono<AppEnv>, doc: OpenApiDocument): void {
  const body = `${JSON.stringify(doc)}\n`;
  app.get('/openapi.json', (c) => c.body(body, 200, { 'content-type': 'application/json' }));
}
