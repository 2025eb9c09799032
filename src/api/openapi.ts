/**
 * The OpenAPI registry: each route file calls `document()` next to its registration, with the
 * same zod schemas the route validates with. The document itself is built ahead of time from
 * this registry (`openapi-document.ts`, `npm run openapi`, into assets/openapi.json), so the
 * running app carries no JSON Schema generator; a test checks that every registered route is
 * documented and vice versa.
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

/** The OpenAPI 3.1 document as JSON, which `GET /openapi.json` answers with. */
export type OpenApiDocument = Record<string, unknown>;
