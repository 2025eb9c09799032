import { cloudflareTest } from '@cloudflare/vitest-pool-workers';
import { defineConfig } from 'vitest/config';

/**
 * Test files that register OpenTelemetry's process-wide globals (a context manager, a tracer or
 * meter provider): each runs in a fresh module graph so no other file inherits them.
 */
const OTEL_GLOBALS = [
  'test/functions/telemetry.test.ts',
  'test/telemetry/tracing.test.ts',
  'test/queue/enqueue.test.ts',
  'test/queue/enqueue-many.test.ts',
];

export default defineConfig({
  test: {
    globalSetup: ['./test/global-setup.ts'],
    // The fault suite's summary table (test, load, faults injected, result) follows the usual
    // report, and the list of what failed comes last, so the tail of any log names it.
    reporters: ['default', './test/faults/summary-reporter.ts', './test/helpers/failure-list.ts'],
    // Each file gets its own database (and nats-server), so files may run side by side.
    fileParallelism: true,
    maxWorkers: 3,
    projects: [
      {
        // Files share their worker's module cache (no per-file re-import: that was a third of
        // the suite's time on two cores). Each file still gets its own database and servers;
        // the few that register process-wide OpenTelemetry globals run isolated, below.
        extends: true,
        test: {
          name: 'node',
          include: ['test/**/*.test.ts'],
          exclude: ['test/worker/**', 'test/faults/**', ...OTEL_GLOBALS],
          isolate: false,
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'node-otel',
          include: OTEL_GLOBALS,
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        // Faults, loads and isolation (spec: reliability): run after the other projects and one
        // file at a time, so their timing criteria are not judged on a machine busy with others.
        extends: true,
        test: {
          name: 'faults',
          include: ['test/faults/**/*.test.ts'],
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        // The real Worker bundle under workerd, reaching PostgreSQL through the Neon driver
        // and the wsproxy the global setup starts.
        plugins: [
          cloudflareTest(({ inject }) => ({
            main: './functions/worker.ts',
            wrangler: { configPath: './wrangler.toml' },
            miniflare: {
              bindings: {
                DATABASE_URL: inject('workerdDatabaseUrl'),
                LEASEHOLD_NEON_WS_PROXY: `127.0.0.1:${inject('wsProxyPort')}`,
                NATS_URL: inject('workerdNatsUrl'),
              },
            },
          })),
        ],
        test: { name: 'workerd', include: ['test/worker/**/*.test.ts'], testTimeout: 30_000 },
      },
    ],
  },
});
