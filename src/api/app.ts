/**
 * The HTTP app: the same Hono app on Node and Workers. Every response carries a
 * `request-id`; every failure leaves in the error envelope; routes register themselves from
 * `routes/`, one endpoint per file. Every request runs inside a server span (a no-op unless
 * the host registered an OpenTelemetry SDK).
 */
import { Hono } from 'hono';
import { ConfiguredAdminKey } from '../auth/configured-admin-key.js';
import { CredentialCache } from '../auth/credential-cache.js';
import { pgCode } from '../db/errors.js';
import { newId } from '../ids.js';
import { serverSpans } from '../telemetry/server-span.js';
import { type ApiError, badRequest, errorBody, internalError, notFound, toApiError } from './errors.js';
import { IdlePolls } from './idle-polls.js';
import { PollGate } from './poll-gate.js';
import { PollRecords } from './poll-record.js';
import { carriesRequestId } from './reply.js';
import { registerRoutes } from './routes/index.js';
import { type StaticFiles, serveStaticFiles } from './static-files.js';
import type { ApiDeps, AppEnv } from './types.js';

/** Per-app state a host may supply; by default the documented limits, so entry points pass nothing. */
export interface AppOptions {
  /** Caps on concurrent long polls (`poll-gate.ts`); default `new PollGate()`. */
  pollGate?: PollGate;
  /**
   * The files under assets/ (`/openapi.json`, the console's script and styles) with their
   * headers, for a host that does not serve them itself: Node passes them; Workers serve them
   * as static assets and pass nothing. Without them the app has no such paths.
   */
  staticFiles?: StaticFiles;
  /**
   * Mounts the operator console (src/console's `registerConsole`) after the API's routes. The
   * entry points pass it, so the API does not depend on its console; without it the app has no
   * /console pages.
   */
  console?: (app: Hono<AppEnv>) => void;
}

/**
 * `deps` is fixed for a long-lived process, or — where connections cannot outlive a request
 * (Workers) — read per request from what the runtime passes as `env` to `app.fetch`, so the
 * app itself (routes, OpenAPI registry) is built once and not on every request.
 */
export function createApp(
  deps: ApiDeps | ((env: unknown) => ApiDeps),
  options: AppOptions = {},
): Hono<AppEnv> {
  const depsFor = typeof deps === 'function' ? deps : () => deps;
  const app = new Hono<AppEnv>();
  const credentials = new CredentialCache();
  const configuredAdminKey = new ConfiguredAdminKey();
  const pollRecords = new PollRecords();
  const idlePolls = new IdlePolls();
  const pollGate = options.pollGate ?? new PollGate();

  app.use(serverSpans());
  app.use(async (c, next) => {
    const requestId = newId('req');
    c.set('requestId', requestId);
    c.set('deps', depsFor(c.env));
    c.set('principal', undefined);
    c.set('credentials', credentials);
    c.set('configuredAdminKey', configuredAdminKey);
    c.set('pollRecords', pollRecords);
    c.set('idlePolls', idlePolls);
    c.set('pollGate', pollGate);
    refuseUnframedBody(c.req.header('transfer-encoding'));
    await next();
    if (!carriesRequestId(c.res)) c.res.headers.set('request-id', requestId);
  });

  if (options.staticFiles) app.use(serveStaticFiles(options.staticFiles));
  registerRoutes(app);
  options.console?.(app);

  app.notFound((c) =>
    respondError(c.get('requestId') ?? newId('req'), notFound(`no such endpoint: ${c.req.path}`)),
  );

  app.onError((err, c) => {
    const requestId = c.get('requestId') ?? newId('req');
    const known = toApiError(err);
    if (known) return respondError(requestId, known);
    (c.get('deps')?.log ?? console).error('unhandled error', { requestId, error: describe(err) });
    return respondError(requestId, internalError());
  });

  return app;
}

/**
 * A request whose Transfer-Encoding does not end in `chunked` has no length a server can
 * trust (RFC 9112 §6.3: refuse it). Node's parser hands such a request to the app when its
 * headers end and only fails on the body, answering 400 itself — by then the route may have
 * acted. So the app refuses it first; the client sees the parser's 400 either way.
 */
function refuseUnframedBody(transferEncoding: string | undefined): void {
  if (transferEncoding === undefined || /(^|,)\s*chunked\s*$/i.test(transferEncoding)) return;
  throw badRequest('Transfer-Encoding must end with chunked');
}

function respondError(requestId: string, err: ApiError): Response {
  const headers = new Headers({ 'content-type': 'application/json', 'request-id': requestId });
  for (const [k, v] of Object.entries(err.options.headers ?? {})) headers.set(k, v);
  return new Response(`${JSON.stringify(errorBody(requestId, err))}\n`, { status: err.status, headers });
}

/**
 * What a log may say about an error: its name, the database's SQLSTATE and message. Never
 * the failed query's text or bound parameters (Drizzle puts both in its own message, and
 * parameters can carry metadata or key hashes).
 */
function describe(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { value: String(err) };
  const cause = err.cause instanceof Error ? err.cause : null;
  const code = pgCode(err);
  if (code !== undefined) return { name: err.name, code, message: cause?.message ?? 'database error' };
  return { name: err.name, message: err.message };
}
