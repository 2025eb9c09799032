/**
 * The OpenAPI 3.1 document, built from the same zod schemas the routes validate with. Each
 * route file calls `document()` next to its registration; `GET /openapi.json` serves the
 * result, and a test checks that every registered route is documented and vice versa.
 */
import * as z from 'zod/mini';

export type Credential = 'environment_key' | 'admin_api_key' | 'platform_api_key' | 'none';

export interface RouteDoc {
  method: 'get' | 'post' | 'put' | 'delete';
  /** Hono form (`/v1/environments/:environmentId/work`); rendered with `{…}` in the document. */
  path: string;
  summary: string;
  credentials: Credential[];
  query?: Record<string, { schema: z.core.$ZodType; description: string; required?: boolean }>;
  body?: z.core.$ZodType;
  /** Status → response body schema (null for no body) and description. */
  responses: Record<number, { description: string; schema?: z.core.$ZodType | null }>;
}

const routes: RouteDoc[] = [];

export function document(doc: RouteDoc): void {
  if (!routes.some((r) => r.method === doc.method && r.path === doc.path)) routes.push(doc);
}

export function documentedRoutes(): readonly RouteDoc[] {
  return routes;
}

export const errorEnvelope = z.object({
  type: z.literal('error'),
  request_id: z.string(),
  error: z.object({
    type: z.string(),
    message: z.string(),
    details: z.optional(z.record(z.string(), z.unknown())),
  }),
});

const SECURITY: Record<Credential, Record<string, string[]>[]> = {
  environment_key: [{ bearer: [] }],
  admin_api_key: [{ bearer: [] }, { apiKey: [] }],
  platform_api_key: [{ bearer: [] }, { apiKey: [] }],
  none: [],
};

export function openApiDocument(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
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
