/**
 * The routes to fuzz, read from the OpenAPI registry the routes fill when they register
 * (`document()` in each route file), and each route's valid requests: path parameters from
 * the world's pools, query and body from the route's own zod schemas.
 */
import fc from 'fast-check';
import { Hono } from 'hono';
import { MAX_BODY_BYTES, MAX_PATCH_BODY_BYTES } from '../../../src/api/body.js';
import { type Credential, documentedRoutes, type RouteDoc } from '../../../src/api/openapi.js';
import { registerRoutes } from '../../../src/api/routes/index.js';
import type { AppEnv } from '../../../src/api/types.js';
import type { FuzzRequest } from './request.js';
import { arbitraryFor, type Hints, type JsonSchema, jsonSchemaOf, Ref, ref } from './schema-arbitrary.js';

export interface RouteModel {
  /** `METHOD /path`, as the registry has it. */
  key: string;
  method: string;
  template: string;
  doc: RouteDoc;
  params: string[];
  query: { name: string; schema: JsonSchema; required: boolean }[];
  body?: JsonSchema;
  /** Whether the handler reads a body at all (documented or optional). */
  readsBody: boolean;
  /** The body cap the route enforces (413 above it). */
  bodyCap: number;
  /** The credential lanes the route documents. */
  lanes: Credential[];
}

/** Handlers that read an optional body the registry cannot mark optional. */
const OPTIONAL_BODY = ['/cancel', '/healthchecks'];

/** Every documented route; the registry is filled by registering the routes on a scratch app. */
export function routeModels(): RouteModel[] {
  if (documentedRoutes().length === 0) registerRoutes(new Hono<AppEnv>());
  return documentedRoutes().map((doc) => {
    const method = doc.method.toUpperCase();
    return {
      key: `${method} ${doc.path}`,
      method,
      template: doc.path,
      doc,
      params: [...doc.path.matchAll(/:(\w+)/g)].map((m) => m[1]!),
      query: Object.entries(doc.query ?? {}).map(([name, q]) => ({
        name,
        schema: jsonSchemaOf(q.schema),
        required: q.required ?? false,
      })),
      body: doc.body ? jsonSchemaOf(doc.body) : undefined,
      readsBody: doc.body !== undefined || OPTIONAL_BODY.some((s) => doc.path.endsWith(s)),
      bodyCap: method === 'POST' && /\/work\/:workId$/.test(doc.path) ? MAX_PATCH_BODY_BYTES : MAX_BODY_BYTES,
      lanes: doc.credentials.filter((c) => c !== 'none'),
    };
  });
}

/**
 * The documented route that answers `method` on `path` (HEAD is its GET), or null: a literal
 * segment wins over a parameter, as the app registers them.
 */
export function answeringRoute(routes: RouteModel[], method: string, path: string): RouteModel | null {
  const wanted = method === 'HEAD' ? 'GET' : method;
  const candidates = routes
    .filter((r) => r.method === wanted)
    .sort((a, b) => a.params.length - b.params.length);
  return candidates.find((r) => new RegExp(`^${r.template.replace(/:\w+/g, '[^/]+')}$`).test(path)) ?? null;
}

/** Which world pool a path parameter draws from on this route. */
function paramPool(route: RouteModel, param: string): string {
  const platform = route.template.startsWith('/v1/platform');
  switch (param) {
    case 'environmentId':
      // Work routes and key routes address the environments that have keys and items.
      return route.template.includes('/work') || route.template.includes('/keys') ? 'env:work' : 'env:any';
    case 'workId':
      return platform ? 'work:claimed' : 'work';
    case 'keyId':
      return route.template.startsWith('/v1/api_keys') ? 'apikey' : 'envkey';
    case 'agentId':
      return 'agent';
    default:
      return param === 'sessionId' ? 'session' : param;
  }
}

/** Fields whose validity the schema cannot say: they name live things. */
function hintsFor(route: RouteModel): Hints {
  const sessionToken = fc.stringMatching(/^[A-Za-z0-9_-]{1,128}$/);
  return {
    environment_id: fc.oneof({ weight: 5, arbitrary: ref('env:any') }, fc.string({ maxLength: 30 })),
    session_id: fc.oneof(ref('session'), sessionToken),
    lease: ref('lease'),
    page: ref(cursorPool(route.template)),
    expected_last_heartbeat: fc.oneof(fc.constant('NO_HEARTBEAT'), ref('heartbeat'), ref('heartbeat')),
    // A long poll waits when the queue is dry; a few milliseconds is enough to take that path.
    block_ms: fc.integer({ min: 1, max: 3 }),
    after_seq: fc.nat(12),
    // Agent versions: mostly ones the seeded agents have, so conditional updates can land.
    version: fc.integer({ min: 1, max: 4 }),
    'created_at[gte]': instantArb,
    'created_at[lte]': instantArb,
  };
}

/** RFC 3339 instants around now, in UTC or with an offset, as a client would send them. */
const instantArb = fc
  .tuple(fc.integer({ min: -3 * 86_400_000, max: 86_400_000 }), fc.constantFrom('Z', '+02:00', '-05:30'))
  .map(([ms, zone]) => {
    const offset =
      zone === 'Z'
        ? 0
        : (zone.startsWith('-') ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4)));
    const local = new Date(Date.now() + ms + offset * 60_000).toISOString().slice(0, -1);
    return `${local}${zone}`;
  });

/** The pool of cursors a list route's `page` draws from. */
export function cursorPool(template: string): string {
  if (template.endsWith('/versions')) return 'cursor:agent-version';
  if (template.startsWith('/v1/agents')) return 'cursor:agent';
  return template.includes('/work') ? 'cursor:work' : 'cursor:env';
}

/** Requests the route's schemas call valid, with live ids and the route's own credential. */
export function validRequest(route: RouteModel): fc.Arbitrary<FuzzRequest> {
  const hints = hintsFor(route);
  const params: Record<string, fc.Arbitrary<unknown>> = {};
  for (const p of route.params) params[p] = ref(paramPool(route, p));
  const query: Record<string, fc.Arbitrary<unknown>> = {};
  // A Ref stays a Ref (resolved when sent): as text it would be "Ref(pool#n)", never a live cursor.
  for (const q of route.query)
    query[q.name] = arbitraryFor(q.schema, hints, q.name).map((v) => (v instanceof Ref ? v : String(v)));
  const required = route.query.filter((q) => q.required).map((q) => q.name);
  const body = route.body
    ? arbitraryFor(route.body, hints)
    : route.readsBody
      ? fc.constantFrom(undefined, {})
      : fc.constant(undefined);
  return fc
    .record({
      params: fc.record(params),
      query: fc.record(query, { requiredKeys: required }),
      lane: fc.constantFrom(...route.lanes),
      body: route.readsBody && !route.body?.required?.length ? fc.option(body, { freq: 5 }) : body,
    })
    .map(({ params: p, query: q, lane, body: b }) => ({
      route: route.key,
      method: route.method,
      template: route.template,
      params: p as FuzzRequest['params'],
      query: Object.entries(q) as FuzzRequest['query'],
      headers: [],
      auth: { kind: 'lane', lane },
      body: b === undefined || b === null ? { kind: 'none' } : { kind: 'json', value: b, edits: [] },
      mutations: [],
    }));
}
