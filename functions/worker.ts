/**
 * Cloudflare Workers entry. `scheduled` runs the queue's housekeeping on the crons declared
 * in wrangler.toml, over a Neon Pool opened for the run and closed before it returns (a
 * connection cannot outlive the request or event that opened it in workerd).
 */
import { type Config, ConfigError, parseConfig } from '../src/config.js';
import { connectNeon } from '../src/db/drivers/neon.js';
import { runOnce } from '../src/queue/housekeeping.js';

type Env = Record<string, unknown>;

function config(env: Env): Config & { databaseUrl: string } {
  const parsed = parseConfig(env);
  if (parsed.databaseUrl === null)
    throw new ConfigError('DATABASE_URL is not set (a Neon connection string)');
  return { ...parsed, databaseUrl: parsed.databaseUrl };
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    try {
      config(env);
    } catch (err) {
      const message = err instanceof ConfigError ? err.message : 'bad environment';
      return Response.json({ type: 'error', error: { type: 'api_error', message } }, { status: 500 });
    }
    if (new URL(request.url).pathname === '/healthz') return Response.json({ ok: true });
    return Response.json(
      { type: 'error', error: { type: 'not_found_error', message: 'not found' } },
      { status: 404 },
    );
  },

  async scheduled(_event: unknown, env: Env, ctx: { waitUntil(p: Promise<unknown>): void }): Promise<void> {
    const { databaseUrl } = config(env);
    const conn = connectNeon(databaseUrl);
    const run = runOnce({ db: conn.db }).finally(() => conn.close());
    ctx.waitUntil(run);
    await run;
  },
};
