/**
 * Management API fixtures: the app with an admin key, calls made as that admin, and the
 * checks every error answer shares (envelope, request id).
 */
import { expect } from 'vitest';
import type { Database } from '../../src/db/handle.js';
import { apiKey, type TestApi, testApi } from './api.js';

export interface Admin {
  api: TestApi;
  /** The admin API key's secret. */
  admin: string;
  /** A call made with the admin key. */
  call(method: string, path: string, body?: unknown): Promise<Response>;
  /** A call made with the admin key that must answer `status`; returns the parsed body. */
  ok<T = Record<string, unknown>>(method: string, path: string, body?: unknown, status?: number): Promise<T>;
}

export async function asAdmin(db: Database): Promise<Admin> {
  const api = testApi(db);
  const admin = await apiKey(db, 'admin');
  const call = (method: string, path: string, body?: unknown) => api.call(method, path, { key: admin, body });
  return {
    api,
    admin,
    call,
    ok: async <T>(method: string, path: string, body?: unknown, status = 200) => {
      const res = await call(method, path, body);
      const text = await res.text();
      expect(res.status, text).toBe(status);
      return (text ? JSON.parse(text) : null) as T;
    },
  };
}

export interface ErrorBody {
  type: 'error';
  request_id: string;
  error: { type: string; message: string; details?: Record<string, unknown> };
}

/** Asserts the wire's error answer: status, JSON envelope of `type`, request id in header and body. */
export async function expectError(res: Response, status: number, type: string): Promise<ErrorBody> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  expect(res.headers.get('content-type')).toContain('application/json');
  const body = JSON.parse(text) as ErrorBody;
  expect(body).toMatchObject({ type: 'error', error: { type } });
  expect(body.error.message).toEqual(expect.any(String));
  expect(res.headers.get('request-id')).toMatch(/^req_[0-9a-z]{24}$/);
  expect(body.request_id).toBe(res.headers.get('request-id'));
  return body;
}

/** RFC 3339 UTC as the wire renders it: microseconds at most, trailing zeros trimmed, `Z`. */
export const WIRE_STAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{0,5}[1-9])?Z$/;

/**
 * A wire timestamp as microseconds since the epoch, to order instants exactly: the trimmed
 * rendering does not sort as text ("…:01.12Z" after "…:01.123Z"), and a Date drops microseconds.
 */
export function micros(stamp: string): bigint {
  const m = /^(.{19})(?:\.(\d{1,6}))?Z$/.exec(stamp);
  if (!m) throw new Error(`not a wire stamp: ${stamp}`);
  return BigInt(Date.parse(`${m[1]}Z`)) * 1000n + BigInt((m[2] ?? '').padEnd(6, '0'));
}

/** An environment id that is well-formed but names nothing. */
export const UNKNOWN_ENV = 'env_0000000000000000000000zz';
