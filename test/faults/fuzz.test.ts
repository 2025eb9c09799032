/**
 * HTTP fuzzing (docs/guarantees.md): for every route the OpenAPI registry documents, fast-check
 * sends valid requests drawn from the route's own schemas and mutated ones (45 % drawn, at
 * least 30 % per route at full scale; see leastMutatedShare), first in process and then over
 * loopback HTTP to the real Node server. Every answer is below 500, a
 * documented status, an error in the documented envelope or a success in its schema, with no
 * stack, path, SQL or secret in it; no refused request writes a row.
 *
 * The seed is printed; LEASEHOLD_FUZZ_SEED=<seed> replays a run (route i runs seed + i).
 */
import { randomInt } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/api/app.js';
import type { JournalDeps } from '../../src/api/types.js';
import { WakeHub } from '../../src/api/wake.js';
import { ensureJournalStream } from '../../src/journal/stream.js';
import { useTestDb } from '../helpers/db.js';
import { atScale, recordFault } from '../helpers/faults.js';
import { useNatsServer } from '../helpers/nats.js';
import { startServer } from '../helpers/server.js';
import { problemsWith } from './fuzz/answer-check.js';
import { installWriteAudit, lastWrite, writesSince } from './fuzz/db-audit.js';
import { fuzzRoute, MUTATED_SHARE, newTally, statusLine, type Tally } from './fuzz/fuzz-run.js';
import { inProcess, malformed, overHttp, sendRaw } from './fuzz/loopback.js';
import { toWire } from './fuzz/request.js';
import { answeringRoute, type RouteModel, routeModels, validRequest } from './fuzz/routes.js';
import { seedWorld } from './fuzz/world.js';

const SEED = Number(process.env.LEASEHOLD_FUZZ_SEED ?? randomInt(2 ** 31));
// The fast scale is a sample: each run draws a new seed, so runs add up; `test:faults` runs 10,000.
const IN_PROCESS_RUNS = atScale(120, 10_000);
const LOOPBACK_RUNS = atScale(40, 1_000);
const ROUTES = routeModels();

/** The poll route takes its items from the world's poll backlog. */
const isPoll = (route: RouteModel) => route.key.endsWith('/poll');
/** A poll route's backlog for `runs` requests: one item each, and some to spare. */
const pollSupply = (runs: number) => runs + 50;

/**
 * The least share of one route's requests that must be mutated: 30 %, or for a sample too small
 * to promise that (the fast scale's 120), five standard deviations below the share drawn, which
 * a working generator misses about once in three million routes. A flat 30 % of 120 failed a CI
 * run (35 of 120, on one of 45 routes: about one run in eighty).
 */
function leastMutatedShare(requests: number): number {
  const sd = Math.sqrt((MUTATED_SHARE * (1 - MUTATED_SHARE)) / requests);
  return Math.min(0.3, MUTATED_SHARE - 5 * sd);
}
/** The Node server's housekeeping timer (functions/node.ts): writes then are not a request's. */

const fmt = (n: number) => n.toLocaleString('en-US');
const pct = (t: Tally) => `${Math.round((100 * t.mutated) / t.requests)} %`;

describe('HTTP fuzzing: generated and mutated requests on every documented route', () => {
  const t = useTestDb('pg');
  const nats = useNatsServer();
  let journal: JournalDeps;

  beforeAll(async () => {
    process.stdout.write(`HTTP fuzz seed ${SEED} (replay: LEASEHOLD_FUZZ_SEED=${SEED})\n`);
    await installWriteAudit(t.db);
    const nc = await nats.connect();
    journal = { nc, js: jetstream(nc) };
    await ensureJournalStream(await jetstreamManager(nc));
  });

  for (const [i, route] of ROUTES.entries()) {
    it(
      `${route.key}: no 5xx, documented statuses and envelopes, refused requests write nothing`,
      async (ctx) => {
        const started = performance.now();
        const world = await seedWorld(t.db, {
          pollBacklog: isPoll(route) ? pollSupply(IN_PROCESS_RUNS) : 20,
          journal: journal.js,
        });
        const logged: string[] = [];
        const log = { warn: () => {}, error: (message: string) => void logged.push(message) };
        const app = createApp({ db: t.db, wake: new WakeHub(), log, journal: async () => journal });
        const tally = await fuzzRoute({
          route,
          world,
          db: t.db,
          target: inProcess(app),
          runs: IN_PROCESS_RUNS,
          seed: SEED + i,
        });
        const seconds = (performance.now() - started) / 1000;

        expect(logged, 'unhandled errors logged').toEqual([]);
        expect(tally.requests).toBe(IN_PROCESS_RUNS);
        expect(tally.mutated / tally.requests).toBeGreaterThanOrEqual(leastMutatedShare(tally.requests));
        recordFault(ctx, {
          load: `${fmt(tally.requests)} requests in process, seed ${SEED + i}`,
          faults: `generated (schema-valid, live ids) + mutated (${pct(tally)}): ${[...tally.classes.keys()].sort().join(', ')}`,
          result: `0 × 5xx; statuses ${statusLine(tally)}; ${fmt(tally.refused)} refused, ${fmt(tally.audited)} audited for writes (${tally.digests} digests): 0 written; slowest ${Math.round(tally.maxMs)} ms; ${seconds.toFixed(1)} s`,
        });
      },
      atScale(60_000, 900_000),
    );
  }

  it(
    'over loopback HTTP, every route, with chunked, oversized and malformed requests: no 5xx, nothing written',
    async (ctx) => {
      const started = performance.now();
      // With the journal wired, as in process: its routes answer rather than 503 'not configured';
      // and no housekeeping, whose writes would land between requests and look like theirs.
      const server = await startServer({
        databaseUrl: t.url,
        env: { NATS_URL: nats.wsUrl, LEASEHOLD_HOUSEKEEPING_EVERY_MS: '0' },
      });
      const target = overHttp(server.port);
      const tally = newTally();
      let raw = 0;
      let previous = 'none';
      try {
        const world = await seedWorld(t.db, {
          adminKey: server.adminKey,
          // Only the poll route draws on it (as in process), and every table digest reads it all.
          pollBacklog: ROUTES.filter(isPoll).length * pollSupply(LOOPBACK_RUNS),
        });
        const host = `127.0.0.1:${server.port}`;
        for (const [i, route] of ROUTES.entries()) {
          await fuzzRoute({
            route,
            world,
            db: t.db,
            target,
            runs: LOOPBACK_RUNS,
            seed: SEED + 1_000 + i,
            tally,
          });
          const [base] = fc.sample(validRequest(route), { seed: SEED + i, numRuns: 1 });
          for (const { name, bytes, method, path } of malformed(toWire(base!, world), host)) {
            const before = await lastWrite(t.db);
            const answer = await sendRaw(server.port, bytes);
            const answering = path === null ? null : answeringRoute(ROUTES, method, path);
            const problems = problemsWith(answering, answer, world.secrets, method);
            if (answer.status >= 400 || answer.parser) {
              const written = await writesSince(t.db, before);
              if (written)
                // A handler may still run on a body cut short when the socket closed, so its
                // write may surface one case late: the message names the case before as well.
                problems.push(`refused request wrote: ${written} (case before: ${previous})`);
            }
            expect(problems, `${route.key} ${name} → ${answer.status} ${answer.text.slice(0, 200)}`).toEqual(
              [],
            );
            previous = name;
            raw++;
          }
        }
      } finally {
        target.close();
        await server.stop();
      }
      const seconds = (performance.now() - started) / 1000;
      expect(server.output()).not.toMatch(/unhandled error/);
      expect(tally.mutated / tally.requests).toBeGreaterThanOrEqual(0.3);
      // The slice must reach the app, not only Node's parser: a share of the requests is served.
      const served = [...tally.statuses].filter(([s]) => s >= 200 && s < 300).reduce((n, [, c]) => n + c, 0);
      expect(served / tally.requests).toBeGreaterThanOrEqual(0.1);
      recordFault(ctx, {
        load: `${fmt(LOOPBACK_RUNS)} requests × ${ROUTES.length} routes over loopback HTTP + ${raw} malformed at the HTTP level, seed ${SEED + 1_000}`,
        faults: `as in process (${pct(tally)} mutated), bodies sent chunked; conflicting framing, bad chunks, NUL/0xff/space in the target, bad header names, obs-fold, bare LF, 100 KB targets, 100 MiB declared`,
        result: `0 × 5xx; statuses ${statusLine(tally)}; ${fmt(tally.refused)} refused, ${fmt(tally.audited)} audited: 0 written; slowest ${Math.round(tally.maxMs)} ms; ${seconds.toFixed(1)} s`,
      });
    },
    atScale(120_000, 900_000),
  );
});
