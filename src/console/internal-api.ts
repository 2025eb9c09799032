/**
 * The console acts through the API itself, in process: the same validation, scoping and error
 * envelope as any client, with the signed-in admin key as the credential. On Workers the
 * request shares the caller's `env`, so it uses the same database connection.
 */
import type { Context, Hono } from 'hono';
import { ApiError, type ErrorType } from '../api/errors.js';
import type { AppEnv } from '../api/types.js';

export type CallApi = <T = unknown>(method: string, path: string, body?: unknown) => Promise<T>;

/** A client of `app` for this request, acting with `key`. A non-2xx answer throws its `ApiError` again, for the page. */
export function apiFor(app: Hono<AppEnv>, c: Context<AppEnv>, key: string): CallApi {
  return async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const headers = new Headers({ authorization: `Bearer ${key}` });
    if (body !== undefined) headers.set('content-type', 'application/json');
    const init: RequestInit = { method, headers };
    if (body !== undefined) init.body = JSON.stringify(body);
    const res = await app.fetch(new Request(new URL(path, c.req.url), init), c.env);
    const text = await res.text();
    const parsed = text === '' ? undefined : (JSON.parse(text) as unknown);
    if (!res.ok) {
      const error = (parsed as { error?: { type?: string; message?: string } } | undefined)?.error;
      throw new ApiError(
        res.status,
        (error?.type ?? 'api_error') as ErrorType,
        error?.message ?? `HTTP ${res.status}`,
      );
    }
    return parsed as T;
  };
}

/** A path segment, encoded. */
export const seg = (value: string) => encodeURIComponent(value);
