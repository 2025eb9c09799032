/**
 * Cloudflare Workers entry. Each request gets its own Neon Pool — a connection cannot outlive
 * the request that opened it in workerd — closed after the response is sent or, for an event
 * stream, after its body ends. A long poll or an event stream LISTENs on that same connection
 * (`ListeningWake`) and wakes on NOTIFY; with LEASEHOLD_LISTEN off (the default over a Neon
 * pooled host, which does not carry notifications) long polls re-poll on a growing backoff
 * inside `block_ms` and streams re-read the session's head on a backoff. Streams close after a
 * bounded lifetime either way (the SDK reconnects; with `enable_request_signal`, a stream whose
 * client went away ends by its next write). `scheduled` runs the queue's housekeeping on the
 * crons in wrangler.toml over a Pool of its own.
 *
 * The brain runs in a Worker of its own (functions/brain-worker.ts, wrangler.brain.toml). With
 * the service binding `BRAIN`, a request that may have enqueued a session's turn triggers it
 * after the response (functions/brain-trigger.ts); without one, turns wait for a brain
 * elsewhere (`npm run brain` on the same database).
 *
 * With NATS_URL (wss://…) the journal routes and the console's journal pages are served as on
 * Node, over one websocket NATS connection per request, opened only when the request first
 * reads the journal (src/api/request-journal.ts) and closed with its Pool. Without it they
 * answer 503, as on a Node server without NATS.
 *
 * `GET /openapi.json` never reaches this code: the document is a file in assets/ (built by
 * `npm run openapi`), which wrangler.toml's `[assets]` serves before the Worker runs, so the
 * app is built without it.
 *
 * LEASEHOLD_ADMIN_KEY (a wrangler secret) works as on Node, where it is ensured at start: an
 * isolate has no start of its own, so the app ensures it before the first credential the
 * isolate resolves (`src/auth/configured-admin-key.ts`). A fresh isolate is the Worker's
 * "next start": it makes a configured key revoked through the API live again.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { createApp } from '../src/api/app.js';
import { requestJournal } from '../src/api/request-journal.js';
import { LIFETIME_MS } from '../src/api/routes/session-events-stream.js';
import type { ApiDeps } from '../src/api/types.js';
import { ListeningWake } from '../src/api/wake.js';
import { type Config, ConfigError, parseConfig } from '../src/config.js';
import { registerConsole } from '../src/console/index.js';
import { connectNeon, type NeonConnection } from '../src/db/drivers/neon.js';
import { runOnce } from '../src/housekeeping/index.js';
import { connectJournal } from '../src/journal/connect.js';
import { notifiedEnvironment, WORK_CHANNEL } from '../src/queue/index.js';
import { SESSION_EVENTS_CHANNEL } from '../src/sessions/index.js';
import { brainTrigger } from './brain-trigger.js';
import { housekeepingOptions } from './settings.js';

type Env = Record<string, unknown>;
interface Ctx {
  waitUntil(p: Promise<unknown>): void;
}

/** Built once per isolate; each request brings its own database through `env`. */
const app = createApp((env) => (env as { deps: ApiDeps }).deps, { console: registerConsole });

/**
 * Settings parsed once per `env`: workerd hands an isolate's every request the same bindings
 * object (a new secret or deploy starts new isolates), so the ~30 settings are not read and
 * checked again on each request. A bad configuration is not remembered: it is reported anew.
 */
const configs = new WeakMap<Env, Config & { databaseUrl: string }>();

function config(env: Env): Config & { databaseUrl: string } {
  const known = configs.get(env);
  if (known) return known;
  const parsed = parseConfig(env);
  if (parsed.databaseUrl === null)
    throw new ConfigError('DATABASE_URL is not set (a Neon connection string)');
  const cfg = { ...parsed, databaseUrl: parsed.databaseUrl };
  configs.set(env, cfg);
  return cfg;
}

function open(cfg: Config & { databaseUrl: string }): NeonConnection {
  return connectNeon(cfg.databaseUrl, {
    ...(cfg.neonWsProxy ? { localProxy: cfg.neonWsProxy } : {}),
    pipelineConnect: cfg.neonPipelineConnect,
  });
}

/** Whether this isolate has said that the database refused a LISTEN (said once, not per request). */
let refusalReported = false;
function reportRefusal(err: unknown): void {
  if (refusalReported) return;
  refusalReported = true;
  console.warn(
    `[leasehold] the database refused LISTEN (${String(err)}): long polls and event streams re-read on a backoff; ` +
      'use the direct (not -pooler) connection string, or set LEASEHOLD_LISTEN=off to stop trying',
  );
}

/**
 * Wake-ups on the request's own connection: its LISTEN is sent only when a long poll or a
 * stream first watches, so other requests pay nothing for it.
 */
function wakeUps(cfg: Config, conn: NeonConnection): Pick<ApiDeps, 'wake' | 'sessionWake'> {
  if (!cfg.listen) return {};
  return {
    wake: new ListeningWake(
      (onPayload) => conn.listen(WORK_CHANNEL, onPayload),
      notifiedEnvironment,
      reportRefusal,
    ),
    sessionWake: new ListeningWake(
      (onPayload) => conn.listen(SESSION_EVENTS_CHANNEL, onPayload),
      (sessionId) => sessionId,
      reportRefusal,
    ),
  };
}

/**
 * Closes the request's connections once its response is done with them: at once for a body
 * written in full, when the body ends (or the client goes away) for an event stream, which
 * reads the database while it is written.
 */
function closeAfter(response: Response, close: () => Promise<unknown>, ctx: Ctx): Response {
  if (!response.body || !response.headers.get('content-type')?.startsWith('text/event-stream')) {
    ctx.waitUntil(close());
    return response;
  }
  const { readable, writable } = new TransformStream();
  ctx.waitUntil(
    response.body
      .pipeTo(writable)
      .catch(() => {})
      .finally(close),
  );
  return new Response(readable, response);
}

export default {
  async fetch(request: Request, env: Env, ctx: Ctx): Promise<Response> {
    let cfg: Config & { databaseUrl: string };
    try {
      cfg = config(env);
    } catch (err) {
      // Bad configuration is the operator's to fix: say which setting, reveal nothing else.
      const message = err instanceof ConfigError ? err.message : 'bad environment';
      return Response.json({ type: 'error', error: { type: 'api_error', message } }, { status: 500 });
    }
    const conn = open(cfg);
    const journal = cfg.natsUrl ? requestJournal(cfg.natsUrl, { name: 'leasehold-api' }) : null;
    const close = () => Promise.all([conn.close(), journal?.close()]);
    let response: Response;
    try {
      const deps: ApiDeps = {
        db: conn.db,
        adminKey: cfg.adminKey ?? undefined,
        ...wakeUps(cfg, conn),
        streamLifetimeMs: LIFETIME_MS,
        turnEnqueued: brainTrigger(env.BRAIN, (p) => ctx.waitUntil(p)),
        journal: journal?.journal,
      };
      response = await app.fetch(request, { deps });
    } catch (err) {
      ctx.waitUntil(close());
      throw err;
    }
    return closeAfter(response, close, ctx);
  },

  // The admin key is not ensured here: housekeeping resolves no credential, and requests ensure
  // it before the first one they resolve. A cron run (every minute, often in an isolate that
  // serves no request) would only add a statement, and bring a revoked configured key back
  // when no request has asked for it.
  // With NATS_URL, the journal purges of deleted sessions run here too, over a connection
  // opened only when one is due and closed with the run.
  async scheduled(_event: unknown, env: Env, ctx: Ctx): Promise<void> {
    const cfg = config(env);
    const conn = open(cfg);
    let nats: Promise<NatsConnection> | null = null;
    const natsUrl = cfg.natsUrl;
    const journal = natsUrl
      ? async () => {
          // Asked for once per run (housekeeping keeps the manager it got).
          nats = connectJournal(natsUrl, { reconnect: false, name: 'leasehold-housekeeping' });
          return jetstreamManager(await nats);
        }
      : undefined;
    const run = runOnce({ db: conn.db, journal }, housekeepingOptions(cfg)).finally(() =>
      Promise.all([conn.close(), nats?.then((nc) => nc.close()).catch(() => {})]),
    );
    ctx.waitUntil(run);
    await run;
  },
};
