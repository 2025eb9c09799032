/**
 * Housekeeping's public surface: `runOnce`, one bounded pass of every step a cron trigger runs
 * (see run-once.ts). The steps themselves belong to the queue and to sessions.
 */

export { type HousekeepingCounts, type HousekeepingDeps, runOnce } from './run-once.js';
export { type VacuumScope, vacuumSchedule } from './vacuum.js';
