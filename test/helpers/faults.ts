/**
 * The fault suite's two knobs: its scale (`npm test` runs every fault test small and fast;
 * `npm run test:faults` sets LEASEHOLD_FAULTS=full for the loads the guarantees are stated at)
 * and the row each test adds to the summary table (`test/faults/summary-reporter.ts`).
 */
import type { TestContext } from 'vitest';

export type FaultScale = 'fast' | 'full';

export const FAULT_SCALE: FaultScale = process.env.LEASEHOLD_FAULTS === 'full' ? 'full' : 'fast';

/** The fast value under `npm test`, the full one under `npm run test:faults`. */
export function atScale<T>(fast: T, full: T): T {
  return FAULT_SCALE === 'full' ? full : fast;
}

/** One row of the summary: what ran, under which load and faults, and what was measured. */
export interface FaultRow {
  /** Load, e.g. "10,000 items, 4 envs, 32 claimers". */
  load: string;
  /** Faults injected, e.g. "PostgreSQL restarted 3× (immediate)". */
  faults: string;
  /** What was measured, e.g. "0 lost, 0 double completions, 12,3 s". */
  result: string;
}

declare module 'vitest' {
  interface TaskMeta {
    fault?: FaultRow;
  }
}

/** Adds (or replaces) this test's row; the reporter adds its name and pass/fail. */
export function recordFault(ctx: Pick<TestContext, 'task'>, row: FaultRow): void {
  ctx.task.meta.fault = row;
}
