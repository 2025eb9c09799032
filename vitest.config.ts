import { cloudflareTest } from '@cloudflare/vitest-pool-workers';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    globalSetup: ['./test/global-setup.ts'],
    // The fault suite's summary table (test, load, faults injected, result) follows the usual report.
    reporters: ['default', './test/faults/summary-reporter.ts'],
    // Each file gets its own database (and nats-server), so files may run side by side.
    fileParallelism: true,
    maxWorkers: 3,
    projects: [
      {
        extends: true,
        test: {
          name: 'node',
          include: ['test/**/*.test.ts'],
          exclude: ['test/worker/**', 'test/faults/**'],
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
