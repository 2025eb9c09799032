import type { Hono } from 'hono';
import * as z from 'zod/mini';
import { readPage } from '../../journal/index.js';
import { authorize, PLATFORM } from '../auth.js';
import { badRequest } from '../errors.js';
import { document } from '../openapi.js';
import { reply } from '../reply.js';
import type { AppEnv } from '../types.js';
import { journalDeps, pathToken, RUN_PATH } from './journal-scope.js';
import { toWireRecord, wireJournalPageSchema } from './journal-wire.js';
import { queryParam } from './work-scope.js';

const DEFAULT_JOURNAL_LIMIT = 100;
/** One page is one bounded consumer read; a full journal is paged, never read in one response. */
const MAX_JOURNAL_LIMIT = 1000;

/**
 * GET /v1/platform/runs/{run}/steps/{step}/journal?after_seq&limit — the step's records after
 * `after_seq` (default 0: from the start), in journal order. `next_after_seq` is null once the
 * page reaches the tail read at the start of the request.
 */
export function registerJournalRead(app: Hono<AppEnv>): void {
  const path = `${RUN_PATH}/steps/:step/journal`;
  document({
    method: 'get',
    path,
    summary: 'Read a step’s agent journal, in pages',
    credentials: ['platform_api_key', 'admin_api_key'],
    query: {
      after_seq: { schema: z.int().check(z.gte(0)), description: 'records after this seq; default 0' },
      limit: {
        schema: z.int().check(z.gte(1), z.lte(MAX_JOURNAL_LIMIT)),
        description: `page size, default ${DEFAULT_JOURNAL_LIMIT}`,
      },
    },
    responses: {
      200: { description: 'a page of records', schema: wireJournalPageSchema },
      400: { description: 'run or step is not 1–128 of [A-Za-z0-9_-], or a bad after_seq or limit' },
      503: {
        description: 'NATS is not configured or cannot be reached, or the journal stream is not provisioned',
      },
    },
  });
  app.get(path, async (c) => {
    await authorize(c, PLATFORM);
    const run = pathToken(c, 'run');
    const step = pathToken(c, 'step');
    const afterSeq = wholeNumber(queryParam(c, 'after_seq')) ?? 0;
    if (Number.isNaN(afterSeq)) throw badRequest('after_seq must be a non-negative integer');
    const limit = wholeNumber(queryParam(c, 'limit')) ?? DEFAULT_JOURNAL_LIMIT;
    if (!(limit >= 1 && limit <= MAX_JOURNAL_LIMIT)) {
      throw badRequest(`limit must be an integer between 1 and ${MAX_JOURNAL_LIMIT}`);
    }
    const page = await readPage((await journalDeps(c)).js, run, step, afterSeq, limit);
    return reply(c, { data: page.records.map(toWireRecord), next_after_seq: page.nextAfterSeq });
  });
}

/** Digits only, and few enough to stay exact (a seq is below 2^53); NaN otherwise, undefined when absent. */
function wholeNumber(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  return /^\d{1,15}$/.test(text) ? Number(text) : Number.NaN;
}
