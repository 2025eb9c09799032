/**
 * `npm run openapi`: writes assets/openapi.json, the OpenAPI document rendered from the routes'
 * schemas (src/api/openapi-document.ts). The Node server serves that file at /openapi.json and
 * the Worker serves it as a static asset, so neither carries the JSON Schema generator. Run it
 * after changing a route or a schema; a test fails while the file is stale.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderOpenApi } from '../src/api/openapi-document.js';

export const OPENAPI_ASSET = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../assets/openapi.json',
);

// Run as a script, not when a test imports the path.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  writeFileSync(OPENAPI_ASSET, renderOpenApi());
  process.stdout.write(`wrote ${path.relative(process.cwd(), OPENAPI_ASSET)}\n`);
}
