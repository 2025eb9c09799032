/**
 * The OpenAPI 3.1 document of every route the app registers, rendered from the registry
 * (`openapi.ts`) with `z.toJSONSchema`. Build-time only: `npm run openapi` (functions/openapi.ts)
 * writes it to assets/openapi.json, which the Node server serves and the Worker serves as a
 * static asset; the app never imports this module, so no runtime bundle carries the generator.
 * A test fails while assets/openapi.json differs from what this renders.
 */
import { Hono } from 'hono';
import * as z from 'zod/mini';
import { type Credential, documentedRoutes, errorEnvelope, type OpenApiDocument } from './openapi.js';
import { registerRoutes } from './routes/index.js';
import type { AppEnv } from './types.js';

const SECURITY: Record<Credential, Record<string, string[]>[]> = {
  environment_key: [{ bearer: [] }],
  admin_api_key: [{ bearer: [] }, { apiKey: [] }],
  platform_api_key: [{ bearer: [] }, { apiKey: [] }],
  none: [],
};

/** The document; the routes register on a scratch app first, so every one is in the registry. */
function openApiDocument(): OpenApiDocument {
  registerRoutes(new Hono<AppEnv>());
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of documentedRoutes()) {
    const path = r.path.replace(/:(\w+)/g, '{$1}');
    const params = [...r.path.matchAll(/:(\w+)/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    const query = Object.entries(r.query ?? {}).map(([name, q]) => ({
      name,
      in: 'query',
      required: q.required ?? false,
      description: q.description,
      schema: z.toJSONSchema(q.schema, { io: 'input', unrepresentable: 'any' }),
    }));
    const responses: Record<string, unknown> = {};
    for (const [status, res] of Object.entries(r.responses)) {
      responses[status] = res.schema
        ? {
            description: res.description,
            content: {
              'application/json': { schema: z.toJSONSchema(res.schema, { unrepresentable: 'any' }) },
            },
          }
        : { description: res.description };
    }
    responses.default = {
      description: 'Error',
      content: { 'application/json': { schema: z.toJSONSchema(errorEnvelope) } },
    };
    paths[path] ??= {};
    paths[path][r.method] = {
      summary: r.summary,
      security: dedupe(r.credentials.flatMap((c) => SECURITY[c])),
      'x-leasehold-credentials': r.credentials,
      parameters: [...params, ...query],
      ...(r.body
        ? {
            requestBody: {
              required: true,
              content: {
                'application/json': {
                  schema: z.toJSONSchema(r.body, { io: 'input', unrepresentable: 'any' }),
                },
              },
            },
          }
        : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Leasehold',
      version: '0.1.0',
      description: 'Work queue and self-hosted environment work API.',
    },
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'Environment key or API key' },
        apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'API key' },
      },
    },
    paths,
  };
}

function dedupe(requirements: Record<string, string[]>[]): Record<string, string[]>[] {
  const seen = new Set<string>();
  return requirements.filter((r) => {
    const key = JSON.stringify(r);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The document as assets/openapi.json holds it: indented, for readable diffs, and a final newline. */
export function renderOpenApi(): string {
  return `${JSON.stringify(openApiDocument(), null, 2)}\n`;
}
