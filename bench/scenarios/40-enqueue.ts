/**
 * Enqueue throughput: how many items one sequential client gets into the queue per second.
 *
 * - enqueue_one: one item per call, each awaited before the next — a round trip and a commit
 *   per item. leasehold = `enqueue` (model_turn, a cloud environment, a fresh session per item
 *   so every call creates); graphile = `addJob`; pgboss = `send`.
 * - enqueue_batch: the same, in calls of 1,000 items — leasehold = `enqueueMany`, graphile =
 *   `addJobs`, pgboss = `insert`.
 * - floor, in both: the same rows as a plain prepared INSERT into work_items (one row per call,
 *   or one INSERT … SELECT per 1,000), with the table's indexes and its foreign key to the
 *   session but none of what an enqueue adds (the live-slot arbitration, the binding check,
 *   the returned item). No enqueue into this table can cost less; a ratio against an anchor
 *   that the floor itself does not reach is beyond what this table allows.
 * - statement, in both: the very statement `enqueue` sends for each item, or `enqueueMany` for
 *   each call of 1,000 (taken from the code through a recording handle before the round is
 *   timed, not retyped), sent as a named prepared statement on a bare `pg.Client`: the
 *   enqueue's guarantees (the live slot, the binding, all or nothing, the answer) with none of
 *   its JavaScript. Against the floor it prices those guarantees in the database; Leasehold
 *   against it prices the Node side (the pool, building, rendering and naming the statement,
 *   the span, the answer).
 * - pooled, in enqueue_one: the same captured statements sent through Leasehold's own
 *   connection and driver (`db.execute`, so its pool, its preparing client and its type
 *   parsers) with none of `enqueue`'s own JavaScript. It splits the Node side in two: against
 *   `statement` it prices the pool and the driver, which any pooled client pays; Leasehold
 *   against it prices `enqueue` itself (the span, the item built from the answer, the ids).
 *
 * Every subject has one pooled connection, opened in setup and warmed up there. Before each
 * measurement its tables are emptied (TRUNCATE) and, for Leasehold, the sessions the items
 * need are seeded by plain SQL; only the enqueue calls are timed. Afterwards the rows are
 * counted, so a subject that silently dropped items cannot post a figure.
 *
 * Each subject also reports where an item's time went, as CPU per item (µs): `pg_cpu_us`, the
 * database's backends (only the measured subject's connection works while it is timed), and
 * `client_cpu_us`, this process (the subject's own JavaScript and its driver). Sequential
 * calls make the rate about the inverse of their sum plus the waits, and CPU time moves less
 * with the machine's other tenants than the rate does.
 */
import pg from 'pg';
import { connectPg, type PgConnection } from '../../src/db/drivers/node-pg.js';
import { RenderedSql } from '../../src/db/fixed-sql.js';
import type { RenderedQuery } from '../../src/db/render.js';
import { newId } from '../../src/ids.js';
import { type EnqueueInput, enqueue, enqueueMany } from '../../src/queue/index.js';
import { type GraphileEnqueue, openGraphileEnqueue } from '../anchors/enqueue-graphile.js';
import { openPgBossEnqueue, type PgBossEnqueue } from '../anchors/enqueue-pgboss.js';
import { backendCpuDelta, backendCpuMs } from '../anchors/wire-cycle.js';
import { captureStatement } from '../lib/capture.js';
import { resetLeasehold } from '../lib/db.js';
import { type BenchContext, type Metrics, percentile, type Scenario } from '../lib/harness.js';

/** Items per subject and round; `batch` is the size of one batched call. */
const FULL = { one: 3_000, batched: 20_000, batch: 1_000, warmup: 200 };
const SMOKE = { one: 30, batched: 2_000, batch: 1_000, warmup: 10 };
type Sizes = typeof FULL;

export function scenarios(ctx: BenchContext): Scenario[] {
  const sizes = ctx.smoke ? SMOKE : FULL;
  return [oneByOne(ctx, sizes), batched(ctx, sizes)];
}

function oneByOne(ctx: BenchContext, sizes: Sizes): Scenario {
  let s: Subjects | null = null;
  return {
    name: 'enqueue_one',
    description:
      `items enqueued one call at a time by one sequential client (${sizes.one.toLocaleString('en-US')} per ` +
      'round and subject, each awaited): leasehold enqueue (model_turn, cloud) vs a bare INSERT of the same row ' +
      "(floor) vs the statement enqueue sends, by hand on a bare client (statement) and through Leasehold's own " +
      'pool and driver (pooled) vs graphile addJob vs pg-boss send',
    // pg-boss is context with no goal, as in the claim scenarios: the first round's is the figure.
    once: ['pgboss'],
    // Rounds of a sequential client move with the machine's other tenants (graphile's rate
    // moved by a quarter within one run of three rounds): seven, their order alternating,
    // so one slow stretch cannot decide the median or always fall on the same subject.
    rounds: 7,
    alternate: true,
    setup: async () => {
      s = await openSubjects(ctx.databaseUrl);
      // Warm every connection's caches and plans the same way before anything is timed.
      await s.leaseholdOne(await s.seed(sizes.warmup));
      await s.floorOne(await s.seed(sizes.warmup));
      await s.statementOne(await enqueueStatements(await s.seed(sizes.warmup)));
      await s.pooledOne(await enqueueStatements(await s.seed(sizes.warmup)));
      await s.graphile.addOneByOne(sizes.warmup, payload);
      await s.pgboss.sendOneByOne(sizes.warmup, payload);
    },
    teardown: async () => {
      await s?.close();
      s = null;
    },
    subjects: {
      leasehold: async () => {
        const inputs = await s!.seed(sizes.one);
        const metrics = await s!.withCpu(sizes.one, () => s!.leaseholdOne(inputs));
        expectRows('leasehold', await s!.leaseholdCount(), sizes.one);
        return metrics;
      },
      floor: async () => {
        const inputs = await s!.seed(sizes.one);
        const metrics = await s!.withCpu(sizes.one, () => s!.floorOne(inputs));
        expectRows('floor', await s!.leaseholdCount(), sizes.one);
        return metrics;
      },
      statement: async () => {
        // Taken before the CPU readings start: only sending them is measured.
        const sent = await enqueueStatements(await s!.seed(sizes.one));
        const metrics = await s!.withCpu(sizes.one, () => s!.statementOne(sent));
        expectRows('statement', await s!.leaseholdCount(), sizes.one);
        return metrics;
      },
      pooled: async () => {
        const sent = await enqueueStatements(await s!.seed(sizes.one));
        const metrics = await s!.withCpu(sizes.one, () => s!.pooledOne(sent));
        expectRows('pooled', await s!.leaseholdCount(), sizes.one);
        return metrics;
      },
      graphile: async () => {
        await s!.graphile.reset();
        const metrics = await s!.withCpu(sizes.one, () =>
          timedEach(sizes.one, (i) => s!.graphile.addOneByOne(1, () => payload(i))),
        );
        expectRows('graphile', await s!.graphile.count(), sizes.one);
        return metrics;
      },
      pgboss: async () => {
        await s!.pgboss.reset();
        const metrics = await s!.withCpu(sizes.one, () =>
          timedEach(sizes.one, (i) => s!.pgboss.sendOneByOne(1, () => payload(i))),
        );
        expectRows('pgboss', await s!.pgboss.count(), sizes.one);
        return metrics;
      },
    },
    ratios: [
      {
        name: 'enqueue_one_vs_graphile',
        numerator: 'leasehold',
        denominator: 'graphile',
        metric: 'items_per_s',
        goal: { op: '>=', value: 2 },
      },
      { name: 'enqueue_one_vs_floor', numerator: 'leasehold', denominator: 'floor', metric: 'items_per_s' },
      // The limit: a bare INSERT of the same row against the same anchor.
      {
        name: 'enqueue_one_floor_vs_graphile',
        numerator: 'floor',
        denominator: 'graphile',
        metric: 'items_per_s',
      },
      // The enqueue's own statement by hand: what its guarantees cost, and what the Node side does.
      {
        name: 'enqueue_one_statement_vs_graphile',
        numerator: 'statement',
        denominator: 'graphile',
        metric: 'items_per_s',
      },
      {
        name: 'enqueue_one_statement_vs_floor',
        numerator: 'statement',
        denominator: 'floor',
        metric: 'items_per_s',
      },
      {
        name: 'enqueue_one_vs_statement',
        numerator: 'leasehold',
        denominator: 'statement',
        metric: 'items_per_s',
      },
      // The Node side split in two: the pool and driver, then enqueue's own JavaScript.
      {
        name: 'enqueue_one_pooled_vs_statement',
        numerator: 'pooled',
        denominator: 'statement',
        metric: 'items_per_s',
      },
      { name: 'enqueue_one_vs_pooled', numerator: 'leasehold', denominator: 'pooled', metric: 'items_per_s' },
      {
        name: 'enqueue_one_pooled_vs_graphile',
        numerator: 'pooled',
        denominator: 'graphile',
        metric: 'items_per_s',
      },
      { name: 'enqueue_one_vs_pgboss', numerator: 'leasehold', denominator: 'pgboss', metric: 'items_per_s' },
    ],
  };
}

function batched(ctx: BenchContext, sizes: Sizes): Scenario {
  let s: Subjects | null = null;
  const { batched: n, batch } = sizes;
  return {
    name: 'enqueue_batch',
    description:
      `items enqueued in calls of ${batch.toLocaleString('en-US')} by one sequential client ` +
      `(${n.toLocaleString('en-US')} per round and subject): leasehold enqueueMany vs a bare INSERT … SELECT of ` +
      'the same rows (floor) vs the statement enqueueMany sends, by hand on a bare client (statement) vs ' +
      'graphile addJobs vs pg-boss insert',
    // Rounds of under a second: with three in a fixed order, Leasehold (always first) once
    // spent 22-23 µs of PostgreSQL CPU an item in two rounds against 18 in the third and in
    // the runs before, which decided the median. Five, their order alternating.
    rounds: 5,
    alternate: true,
    setup: async () => {
      s = await openSubjects(ctx.databaseUrl);
      await s.leaseholdMany(await s.seed(batch), batch);
      await s.floorMany(await s.seed(batch), batch);
      await s.statementMany(await enqueueManyStatements(await s.seed(batch), batch), batch);
      await s.graphile.addInBatches(batch, batch, payload);
      await s.pgboss.insertInBatches(batch, batch, payload);
    },
    teardown: async () => {
      await s?.close();
      s = null;
    },
    subjects: {
      leasehold: async () => {
        const inputs = await s!.seed(n);
        const metrics = await s!.withCpu(n, () => s!.leaseholdMany(inputs, batch));
        expectRows('leasehold', await s!.leaseholdCount(), n);
        return metrics;
      },
      floor: async () => {
        const inputs = await s!.seed(n);
        const metrics = await s!.withCpu(n, () => s!.floorMany(inputs, batch));
        expectRows('floor', await s!.leaseholdCount(), n);
        return metrics;
      },
      statement: async () => {
        // Taken before the CPU readings start: only sending them is measured.
        const sent = await enqueueManyStatements(await s!.seed(n), batch);
        const metrics = await s!.withCpu(n, () => s!.statementMany(sent, n));
        expectRows('statement', await s!.leaseholdCount(), n);
        return metrics;
      },
      graphile: async () => {
        await s!.graphile.reset();
        const metrics = await s!.withCpu(n, () =>
          timedAll(n, () => s!.graphile.addInBatches(n, batch, payload)),
        );
        expectRows('graphile', await s!.graphile.count(), n);
        return metrics;
      },
      pgboss: async () => {
        await s!.pgboss.reset();
        const metrics = await s!.withCpu(n, () =>
          timedAll(n, () => s!.pgboss.insertInBatches(n, batch, payload)),
        );
        expectRows('pgboss', await s!.pgboss.count(), n);
        return metrics;
      },
    },
    ratios: [
      {
        name: 'enqueue_batch_vs_graphile',
        numerator: 'leasehold',
        denominator: 'graphile',
        metric: 'items_per_s',
        goal: { op: '>=', value: 1 },
      },
      { name: 'enqueue_batch_vs_floor', numerator: 'leasehold', denominator: 'floor', metric: 'items_per_s' },
      // The limit: a bare INSERT … SELECT of the same rows against the same anchor.
      {
        name: 'enqueue_batch_floor_vs_graphile',
        numerator: 'floor',
        denominator: 'graphile',
        metric: 'items_per_s',
      },
      // enqueueMany's own statement by hand: the limit with its guarantees, and what they cost.
      {
        name: 'enqueue_batch_statement_vs_graphile',
        numerator: 'statement',
        denominator: 'graphile',
        metric: 'items_per_s',
      },
      {
        name: 'enqueue_batch_statement_vs_floor',
        numerator: 'statement',
        denominator: 'floor',
        metric: 'items_per_s',
      },
      {
        name: 'enqueue_batch_vs_statement',
        numerator: 'leasehold',
        denominator: 'statement',
        metric: 'items_per_s',
      },
      {
        name: 'enqueue_batch_vs_pgboss',
        numerator: 'leasehold',
        denominator: 'pgboss',
        metric: 'items_per_s',
      },
    ],
  };
}

/** The anchors' job payload: about what a Leasehold item carries besides its columns. */
const payload = (i: number) => ({ session_id: `bench_s${i}` });

interface Subjects {
  graphile: GraphileEnqueue;
  pgboss: PgBossEnqueue;
  /** Empties Leasehold's tables and seeds one cloud environment with `n` sessions; untimed. */
  seed(n: number): Promise<EnqueueInput[]>;
  leaseholdOne(inputs: EnqueueInput[]): Promise<Metrics>;
  leaseholdMany(inputs: EnqueueInput[], batch: number): Promise<Metrics>;
  /** The same rows as plain prepared INSERTs on a connection of their own (see the module doc). */
  floorOne(inputs: EnqueueInput[]): Promise<Metrics>;
  floorMany(inputs: EnqueueInput[], batch: number): Promise<Metrics>;
  /** `enqueue`'s own statements (`enqueueStatements`), sent by hand one at a time (see the module doc). */
  statementOne(sent: RenderedQuery[]): Promise<Metrics>;
  /** The same statements through Leasehold's connection and driver (`db.execute`), one at a time. */
  pooledOne(sent: RenderedQuery[]): Promise<Metrics>;
  /** `enqueueMany`'s own statements, one per call (`enqueueManyStatements`), for `items` items. */
  statementMany(sent: RenderedQuery[], items: number): Promise<Metrics>;
  leaseholdCount(): Promise<number>;
  /** `run`'s metrics plus the database's and this process's CPU per item over it (µs). */
  withCpu(items: number, run: () => Promise<Metrics>): Promise<Metrics>;
  close(): Promise<void>;
}

async function openSubjects(databaseUrl: string): Promise<Subjects> {
  // Resets and seeding go through their own connection; each subject's is only ever timed.
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  const opened: Array<() => Promise<void>> = [() => admin.end()];
  const close = async () => {
    for (const end of opened.reverse()) await end();
  };
  try {
    const leasehold: PgConnection = connectPg(databaseUrl, { max: 1 });
    opened.push(() => leasehold.close());
    const floor = new pg.Client({ connectionString: databaseUrl });
    await floor.connect();
    opened.push(() => floor.end());
    const statement = new pg.Client({ connectionString: databaseUrl });
    await statement.connect();
    opened.push(() => statement.end());
    const graphile = await openGraphileEnqueue(databaseUrl);
    opened.push(() => graphile.close());
    const pgboss = await openPgBossEnqueue(databaseUrl);
    opened.push(() => pgboss.close());
    return {
      graphile,
      pgboss,
      seed: (n) => seedSessions(admin, n),
      leaseholdOne: (inputs) =>
        timedEach(inputs.length, async (i) => {
          if (!(await enqueue(leasehold.db, inputs[i]!)).created) throw new Error('enqueue did not create');
        }),
      leaseholdMany: (inputs, batch) =>
        timedAll(inputs.length, async () => {
          for (const call of calls(inputs, batch)) {
            const results = await enqueueMany(leasehold.db, call);
            if (!results.every((r) => r.created)) throw new Error('enqueueMany did not create every item');
          }
        }),
      floorOne: (inputs) =>
        timedEach(inputs.length, async (i) => {
          const { environmentId, sessionId, kind } = inputs[i]!;
          await floor.query({
            name: 'floor_one',
            text: `INSERT INTO work_items (id, environment_id, session_id, kind, lane) VALUES ($1, $2, $3, $4, 'claim')`,
            values: [newId('work'), environmentId, sessionId, kind],
          });
        }),
      statementOne: (sent) =>
        timedEach(sent.length, async (i) => {
          const { sql: text, params: values } = sent[i]!;
          await statement.query({ name: 'enqueue_statement', text, values });
        }),
      pooledOne: (sent) =>
        timedEach(sent.length, async (i) => {
          // A query that carries its rendering: the driver sends it as it sends enqueue's own.
          await leasehold.db.execute(new RenderedSql([], sent[i]!));
        }),
      statementMany: (sent, items) =>
        timedAll(items, async () => {
          for (const { sql: text, params: values } of sent)
            await statement.query({ name: 'enqueue_many_statement', text, values });
        }),
      floorMany: (inputs, batch) =>
        timedAll(inputs.length, async () => {
          for (const call of calls(inputs, batch)) {
            const rows = call.map((input) => ({
              id: newId('work'),
              environment_id: input.environmentId,
              session_id: input.sessionId,
              kind: input.kind,
            }));
            await floor.query({
              name: 'floor_many',
              text: `INSERT INTO work_items (id, environment_id, session_id, kind, lane)
                     SELECT id, environment_id, session_id, kind, 'claim'
                       FROM jsonb_to_recordset($1::jsonb) AS i(id text, environment_id text, session_id text, kind text)`,
              values: [JSON.stringify(rows)],
            });
          }
        }),
      leaseholdCount: async () =>
        (await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM work_items')).rows[0]!.n,
      withCpu: async (items, run) => {
        // The admin connection's own backend is left out of the readings.
        const backends = await backendCpuMs(admin);
        const client = process.cpuUsage();
        const metrics = await run();
        const used = process.cpuUsage(client);
        return {
          ...metrics,
          pg_cpu_us: (backendCpuDelta(backends, await backendCpuMs(admin)) * 1000) / items,
          client_cpu_us: (used.user + used.system) / items,
        };
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/** A fresh cloud environment with sessions `<env>_s1…n`, one model_turn input per session. */
async function seedSessions(admin: pg.Client, n: number): Promise<EnqueueInput[]> {
  await resetLeasehold(admin);
  const environmentId = `env_enq${Date.now().toString(36)}`;
  await admin.query(
    `INSERT INTO environments (id, kind, name, config) VALUES ($1, 'cloud', 'bench', '{"type":"cloud"}')`,
    [environmentId],
  );
  await admin.query(
    `INSERT INTO sessions (id, environment_id) SELECT $1 || '_s' || g, $1 FROM generate_series(1, $2::int) g`,
    [environmentId, n],
  );
  await admin.query('ANALYZE sessions');
  return Array.from({ length: n }, (_, i) => ({
    environmentId,
    sessionId: `${environmentId}_s${i + 1}`,
    kind: 'model_turn' as const,
  }));
}

/** The statement `enqueue` sends for each input (each with its own minted id), taken from the code. */
async function enqueueStatements(inputs: EnqueueInput[]): Promise<RenderedQuery[]> {
  const statements: RenderedQuery[] = [];
  for (const input of inputs) {
    statements.push(
      await captureStatement((h) => enqueue(h, input), { createdAt: '2000-01-01T00:00:00.000000Z' }),
    );
  }
  return statements;
}

/**
 * The statement `enqueueMany` sends for each call of `batch` inputs (each item with its own
 * minted id), taken from the code: answered as a batch that created every item, it sends one.
 */
async function enqueueManyStatements(inputs: EnqueueInput[], batch: number): Promise<RenderedQuery[]> {
  const statements: RenderedQuery[] = [];
  for (const call of calls(inputs, batch)) {
    const summary = {
      created: true,
      createdCount: call.length,
      createdIds: null,
      insertedAt: '2000-01-01T00:00:00.000000Z',
    };
    statements.push(await captureStatement((h) => enqueueMany(h, call), summary));
  }
  return statements;
}

/** `inputs` cut into calls of `batch` (the last may be shorter), in order. */
function calls<T>(inputs: readonly T[], batch: number): T[][] {
  return Array.from({ length: Math.ceil(inputs.length / batch) }, (_, i) =>
    inputs.slice(i * batch, (i + 1) * batch),
  );
}

/** `n` calls of `op`, one after another: throughput and the per-call latency. */
async function timedEach(n: number, op: (i: number) => Promise<void>): Promise<Metrics> {
  const ms: number[] = new Array(n);
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await op(i);
    ms[i] = performance.now() - t0;
  }
  const seconds = (performance.now() - started) / 1000;
  return { items_per_s: n / seconds, p50_ms: percentile(ms, 50), p99_ms: percentile(ms, 99) };
}

/** One timed run that enqueues `n` items. */
async function timedAll(n: number, run: () => Promise<void>): Promise<Metrics> {
  const started = performance.now();
  await run();
  return { items_per_s: n / ((performance.now() - started) / 1000) };
}

function expectRows(subject: string, found: number, expected: number): void {
  if (found !== expected) throw new Error(`${subject}: ${found} rows after enqueuing ${expected} items`);
}
