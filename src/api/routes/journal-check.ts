import type { Hono } from 'hono';
import { check } from '../../journal/check.js';
import { authorize, PLATFORM } from '../auth.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { journalDeps, pathToken, RUN_PATH } from './journal-scope.js';
import { toWireReport, wireCheckReportSchema } from './journal-wire.js';

/**
 * GET /v1/platform/runs/{run}/check — audits every step journal of the run against the journal
 * invariants and answers the report, violations included, with 200: a violation is a finding
 * about the run, not a failure of the request. A run with no journal has no steps.
 */
export function registerJournalCheck(app: Hono<AppEnv>): void {
  const path = `${RUN_PATH}/check`;
  document({
    method: 'get',
    path,
    summary: 'Check a run’s agent journals against the journal invariants',
    credentials: ['platform_api_key', 'admin_api_key'],
    responses: {
      200: { description: 'the report', schema: wireCheckReportSchema },
      400: { description: 'run is not 1–128 characters of [A-Za-z0-9_-]' },
      503: { description: 'NATS is not configured, or the journal stream is not provisioned' },
    },
  });
  app.get(path, async (c) => {
    await authorize(c, PLATFORM);
    const run = pathToken(c, 'run');
    return reply(c, toWireReport(await check(journalDeps(c).nc, run)));
  });
}
