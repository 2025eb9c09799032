import type { Hono } from 'hono';
import * as z from 'zod/mini';
import { check } from '../../journal/index.js';
import { authorize, PLATFORM } from '../auth.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { JOURNAL_TOKEN, journalDeps, journalToken, pathToken, RUN_PATH } from './journal-scope.js';
import { toWireReport, wireCheckReportSchema } from './journal-wire.js';
import { queryParam } from './work-scope.js';

/**
 * GET /v1/platform/runs/{run}/check?step — audits every step journal of the run (or only
 * `step`) against the journal invariants and answers the report, violations included, with
 * 200: a violation is a finding about the run, not a failure of the request. A run with no
 * journal has no steps.
 */
export function registerJournalCheck(app: Hono<AppEnv>): void {
  const path = `${RUN_PATH}/check`;
  document({
    method: 'get',
    path,
    summary: 'Check a run’s agent journals against the journal invariants',
    credentials: ['platform_api_key', 'admin_api_key'],
    query: {
      step: {
        schema: z.string().check(z.regex(JOURNAL_TOKEN)),
        description: 'check only this step of the run (default: every step)',
      },
    },
    responses: {
      200: { description: 'the report', schema: wireCheckReportSchema },
      400: { description: 'run or step is not 1–128 characters of [A-Za-z0-9_-]' },
      503: {
        description: 'NATS is not configured or cannot be reached, or the journal stream is not provisioned',
      },
    },
  });
  app.get(path, async (c) => {
    await authorize(c, PLATFORM);
    const run = pathToken(c, 'run');
    const stepText = queryParam(c, 'step');
    const step = stepText === undefined ? undefined : journalToken('step', stepText);
    const report = await check((await journalDeps(c)).nc, run, step === undefined ? {} : { stepIds: [step] });
    return reply(c, toWireReport(report));
  });
}
