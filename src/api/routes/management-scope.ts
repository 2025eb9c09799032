/**
 * What the management endpoints share: their paths, path parameters checked before anything
 * reaches SQL (a malformed id is a 404 exactly like a missing one), and the 400s that carry
 * an `error.details.error_code` so the SDK raises its typed error.
 */
import type { Context } from 'hono';
import { type IdPrefix, isMintedId } from '../../ids.js';
import { ApiError, notFound } from '../errors.js';
import type { AppEnv } from '../types.js';

export const ENVIRONMENTS = '/v1/environments';
export const ENVIRONMENT = `${ENVIRONMENTS}/:environmentId`;
export const ENVIRONMENT_KEYS = `${ENVIRONMENT}/keys`;
export const API_KEYS = '/v1/api_keys';

/** A freshly issued secret must not linger in any cache between here and the caller. */
export const NO_STORE: Record<string, string> = { 'cache-control': 'no-store', pragma: 'no-cache' };

export const environmentNotFound = () => notFound('environment not found');

/** The path's environment id, or a 404 when it is not one Leasehold mints. */
export function environmentParam(c: Context<AppEnv>): string {
  const id = c.req.param('environmentId') ?? '';
  if (!isMintedId(id, 'env')) throw environmentNotFound();
  return id;
}

/** The path's `keyId`, or a 404 when it is not an id of `prefix`. */
export function keyParam(c: Context<AppEnv>, prefix: Extract<IdPrefix, 'envkey' | 'apikey'>): string {
  const id = c.req.param('keyId') ?? '';
  if (!isMintedId(id, prefix)) throw keyNotFound(prefix);
  return id;
}

export function keyNotFound(prefix: 'envkey' | 'apikey'): ApiError {
  return notFound(prefix === 'envkey' ? 'environment key not found' : 'API key not found');
}

/** The SDK's typed 400s for environments, keyed by `error.details.error_code`. */
export type EnvironmentErrorCode = 'environment_archived' | 'invalid_config_type_change' | 'invalid_metadata';

export function codedBadRequest(
  message: string,
  errorCode: EnvironmentErrorCode | 'environment_has_sessions',
) {
  return new ApiError(400, 'invalid_request_error', message, { details: { error_code: errorCode } });
}
