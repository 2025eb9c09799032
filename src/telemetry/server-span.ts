/**
 * The HTTP server span: every request extracts W3C `traceparent`/`tracestate` (header names
 * are case-insensitive; no propagator package, no baggage) and runs its handler inside a
 * SERVER span named `"<METHOD> <route>"` — the matched route pattern, so ids in the path do
 * not make every span name unique; the raw path when no route matched (docs/queue.md, "Telemetry").
 * Kept apart from `tracing.ts` so the queue, which opens spans too, never imports Hono.
 */
import { context, SpanKind, trace } from '@opentelemetry/api';
import type { Context as HonoContext, MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import { remoteContext } from './trace-context.js';
import { markError, tracer } from './tracing.js';

/** Registered first in `createApp`, so the span covers every other middleware and the error handler. */
export function serverSpans(): MiddlewareHandler {
  return async function serverSpan(c, next) {
    const parent = remoteContext({
      traceparent: c.req.header('traceparent'),
      tracestate: c.req.header('tracestate'),
    });
    // Named by the method alone (semconv's name while the route is unknown) until the
    // answering route is known, after the handler ran.
    const span = tracer().startSpan(
      c.req.method,
      {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': c.req.method, 'url.path': c.req.path },
      },
      parent,
    );
    try {
      await context.with(trace.setSpan(parent, span), next);
    } catch (err) {
      // Only what the app's own error handler could not turn into a response gets here.
      markError(span, err);
      span.end();
      throw err;
    }
    const route = matchedRoute(c);
    span.updateName(`${c.req.method} ${route ?? c.req.path}`);
    if (route) span.setAttribute('http.route', route);
    span.setAttribute('http.response.status_code', c.res.status);
    // Without an error object (a handler answered 5xx itself) semconv's error.type is the status.
    if (c.res.status >= 500) {
      if (c.error) markError(span, c.error);
      else markError(span, undefined, String(c.res.status));
    }
    span.end();
  };
}

/**
 * The pattern of the route that answered, or null when none did (app.notFound): then the
 * last handler that ran is a catch-all middleware, which names no route.
 */
function matchedRoute(c: HonoContext): string | null {
  const path = routePath(c);
  return path === '' || path === '*' || path === '/*' ? null : path;
}
