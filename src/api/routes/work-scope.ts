/** Path parameters of the work endpoints, checked before anything reaches SQL. */
import type { Context } from 'hono';
import { isMintedId } from '../../ids.js';
import { directCalls, type WorkCalls } from '../../queue/index.js';
import { notFound } from '../errors.js';
import type { ApiDeps, AppEnv } from '../types.js';

export const WORK_BASE = '/v1/environments/:environmentId/work';

/** The work id, or a 404 identical to a missing item when it is not one Leasehold mints. */
export function workId(c: Context<AppEnv>): string {
  const id = c.req.param('workId') ?? '';
  if (!isMintedId(id, 'work')) throw notFound('work item not found');
  return id;
}

/**
 * The environment id in the path. One Leasehold never mints names no environment, so it is
 * answered as an unknown one (`''`: no key belongs to it, no item lives in it) and never
 * reaches SQL, where a NUL in it would be a database error (500).
 */
export function environmentId(c: Context<AppEnv>): string {
  const id = c.req.param('environmentId') ?? '';
  return isMintedId(id, 'env') ? id : '';
}

/** An optional query parameter, treating an empty value as absent (the SDK sends `null` as `key=`). */
export function queryParam(c: Context<AppEnv>, name: string): string | undefined {
  const values = c.req.queries(name)?.filter((v) => v !== '');
  return values?.length ? values[values.length - 1] : undefined;
}

/** An integer within [min, max] after clamping, or `fallback` when absent, unparseable or below `min`. */
export function lenientInt(value: string | undefined, fallback: number, max: number): number {
  // Any integer, however long: a huge one clamps to `max` rather than overflowing or erroring.
  if (value === undefined || !/^-?\d{1,400}$/.test(value)) return fallback;
  const n = Number(value);
  if (n <= 0) return fallback;
  return Math.min(n, max);
}

/** How this host's hot work calls (polls, acks, …, platform claims) reach the database (`ApiDeps.workCalls`). */
export function workCalls(c: Context<AppEnv>): WorkCalls {
  return hostCalls(c.get('deps'));
}

/** `workCalls` for code that holds the host's deps rather than a request. */
export function hostCalls(deps: ApiDeps): WorkCalls {
  return deps.workCalls ?? directCalls(deps.db);
}
