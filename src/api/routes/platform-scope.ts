/**
 * What the platform lane's routes share: the path base, the checks on path parameters and
 * lease proofs that run before anything reaches SQL, and the body fields several routes take.
 */
import type { Context } from 'hono';
import * as z from 'zod/mini';
import { isMintedId, isSessionId } from '../../ids.js';
import { type Item, LeaseLostError, WORK_KINDS } from '../../queue/index.js';
import { isRfc3339 } from '../../rfc3339.js';
import { badRequest, notFound } from '../errors.js';
import type { AppEnv } from '../types.js';

export const PLATFORM_BASE = '/v1/platform';

/**
 * The longest lease one claim or extend grants. A holder that dies keeps its item out of
 * reach until the lease lapses, so the cap bounds that outage at an hour; longer work extends.
 */
export const MAX_LEASE_TTL_SECONDS = 3600;

export const kindSchema = z.enum(WORK_KINDS);

/** Seconds, fractions allowed (the lease is stamped to the microsecond), 0 < ttl ≤ 3600. */
export const ttlSecondsSchema = z
  .number()
  .check(
    z.positive(),
    z.lte(MAX_LEASE_TTL_SECONDS),
    z.describe(`lease length in seconds, greater than 0 and at most ${MAX_LEASE_TTL_SECONDS}`),
  );

/** The opaque proof a claim or extend returned, echoed exactly. */
export const leaseSchema = z
  .string()
  .check(z.describe('the lease proof from claim or extend, echoed exactly'));

export const sessionIdSchema = z
  .string()
  .check(
    z.minLength(1),
    z.maxLength(128),
    z.refine(isSessionId, 'must be 1–128 characters of [A-Za-z0-9_-]'),
    z.describe('opaque platform session id: 1–128 characters of [A-Za-z0-9_-]'),
  );

/** The work id in the path, or a 404 identical to a missing item when Leasehold never mints it. */
export function platformWorkId(c: Context<AppEnv>): string {
  const id = c.req.param('workId') ?? '';
  if (!isMintedId(id, 'work')) throw notFound('work item not found');
  return id;
}

/** The session id in the path; ids are opaque but their alphabet is fixed, so anything else is a 400. */
export function pathSessionId(c: Context<AppEnv>): string {
  const id = c.req.param('sessionId') ?? '';
  if (!isSessionId(id)) throw badRequest('session_id must be 1–128 characters of [A-Za-z0-9_-]');
  return id;
}

/** Offsets Postgres takes (±15:59) and the fraction digits any proof could carry (to the ns). */
const SQL_SAFE_TIMESTAMP = /^.{19}(\.\d{1,9})?(?:[Zz]|[+-](0\d|1[0-5]):\d{2})$/;

/**
 * The holder of `workId` as the queue's proof-carrying writes see it. Those writes match on
 * the id and the lease alone, so the rest of the Item is filler that nothing reads. A lease
 * that is no timestamp Postgres would take can never be the current proof: it is a lost lease
 * (409) at once, and never reaches SQL, where it would be a database error (500).
 */
export function heldItem(workId: string, lease: string): Item {
  if (!isRfc3339(lease) || !SQL_SAFE_TIMESTAMP.test(lease)) {
    throw new LeaseLostError(workId, 'the lease is not a proof this server issues');
  }
  return {
    id: workId,
    lease,
    environmentId: '',
    sessionId: '',
    kind: 'model_turn',
    reclaimed: false,
    claims: 0,
    metadata: {},
    traceContext: null,
  };
}
