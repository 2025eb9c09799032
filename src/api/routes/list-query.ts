/**
 * Query parameters the session and event lists share: a bounded `limit`, `order`, repeated
 * array parameters (the SDK sends `types[]=a&types[]=b`; `types=a` is taken too) and the
 * `created_at[gt|gte|lt|lte]` bounds, each refused with a 400 that names it.
 */
import type { Context } from 'hono';
import { isRfc3339 } from '../../rfc3339.js';
import { badRequest } from '../errors.js';
import type { AppEnv } from '../types.js';
import { queryParam } from './work-scope.js';

export function limitParam(c: Context<AppEnv>, fallback: number, max: number): number {
  const text = queryParam(c, 'limit') ?? String(fallback);
  const limit = Number(text);
  if (!/^\d{1,5}$/.test(text) || limit < 1 || limit > max) {
    throw badRequest(`limit must be an integer between 1 and ${max}`);
  }
  return limit;
}

export function orderParam(c: Context<AppEnv>, fallback: 'asc' | 'desc'): 'asc' | 'desc' {
  const order = queryParam(c, 'order') ?? fallback;
  if (order !== 'asc' && order !== 'desc') throw badRequest('order must be asc or desc');
  return order;
}

/** Every value of an array parameter, bracketed or not, empty values dropped. */
export function arrayParam(c: Context<AppEnv>, name: string): string[] {
  return [...(c.req.queries(`${name}[]`) ?? []), ...(c.req.queries(name) ?? [])].filter((v) => v !== '');
}

const BOUNDS = ['gt', 'gte', 'lt', 'lte'] as const;
export type Bound = (typeof BOUNDS)[number];

/** An RFC 3339 date-time query parameter, or undefined when absent. */
export function instantParam(c: Context<AppEnv>, name: string): string | undefined {
  const value = queryParam(c, name);
  if (value !== undefined && !isRfc3339(value)) throw badRequest(`${name} must be an RFC 3339 date-time`);
  return value;
}

/** The `created_at[…]` bounds given, each an RFC 3339 instant. */
export function createdAtParams(c: Context<AppEnv>): Array<[Bound, string]> {
  const out: Array<[Bound, string]> = [];
  for (const op of BOUNDS) {
    const value = instantParam(c, `created_at[${op}]`);
    if (value !== undefined) out.push([op, value]);
  }
  return out;
}

/** A boolean flag as the SDK sends one (`true`/`false`); absent is false. */
export function flagParam(c: Context<AppEnv>, name: string): boolean {
  const value = queryParam(c, name);
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  throw badRequest(`${name} must be true or false`);
}
