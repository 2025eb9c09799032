/**
 * Environment keys and API keys on the wire. A secret (`key`) appears only in the answer to
 * its issuance, which is sent `Cache-Control: no-store`; lists carry ids, names and times,
 * never a secret or its hash.
 */
import * as z from 'zod/mini';
import type { ApiKeyInfo, IssuedKey, KeyInfo } from '../../auth/credentials.js';

const MAX_KEY_NAME = 128;
/** Ten years: long enough for any rotation policy, short enough that expires_at stays a sane date. */
const MAX_EXPIRES_IN_SECONDS = 10 * 365 * 24 * 60 * 60;

const keyName = z
  .string()
  .check(
    z.trim(),
    z.minLength(1),
    z.maxLength(MAX_KEY_NAME),
    z.describe(`1–${MAX_KEY_NAME} characters after trimming`),
  );
const expiresIn = z
  .optional(z.nullable(z.int().check(z.positive(), z.lte(MAX_EXPIRES_IN_SECONDS))))
  .check(z.describe('seconds until the key expires; absent or null: never'));

export const environmentKeyBody = z.strictObject({ name: keyName, expires_in_seconds: expiresIn });
export const apiKeyBody = z.strictObject({
  name: keyName,
  scope: z
    .enum(['admin', 'platform'])
    .check(z.describe('admin: management and everything; platform: the platform lane')),
  expires_in_seconds: expiresIn,
});

export function toWireEnvironmentKey(k: KeyInfo) {
  return {
    id: k.id,
    type: 'environment_key' as const,
    name: k.name,
    created_at: k.createdAt,
    expires_at: k.expiresAt,
  };
}

export function toWireIssuedEnvironmentKey(k: IssuedKey) {
  return {
    id: k.id,
    type: 'environment_key' as const,
    key: k.key,
    name: k.name,
    created_at: k.createdAt,
    expires_at: k.expiresAt,
  };
}

export function toWireApiKey(k: ApiKeyInfo) {
  return {
    id: k.id,
    type: 'api_key' as const,
    name: k.name,
    scope: k.scope,
    created_at: k.createdAt,
    expires_at: k.expiresAt,
  };
}

export function toWireIssuedApiKey(k: IssuedKey & Pick<ApiKeyInfo, 'scope'>) {
  return {
    id: k.id,
    type: 'api_key' as const,
    key: k.key,
    name: k.name,
    scope: k.scope,
    created_at: k.createdAt,
    expires_at: k.expiresAt,
  };
}

const stamp = z.string().check(z.describe('RFC 3339 UTC, microseconds, trailing zeros trimmed'));
export const wireEnvironmentKeySchema = z.object({
  id: z.string(),
  type: z.literal('environment_key'),
  name: z.string(),
  created_at: stamp,
  expires_at: z.nullable(stamp),
});
export const wireIssuedEnvironmentKeySchema = z.extend(wireEnvironmentKeySchema, {
  key: z.string().check(z.describe('the secret: shown here once, never again')),
});
export const wireApiKeySchema = z.object({
  id: z.string(),
  type: z.literal('api_key'),
  name: z.string(),
  scope: z.enum(['admin', 'platform']),
  created_at: stamp,
  expires_at: z.nullable(stamp),
});
export const wireIssuedApiKeySchema = z.extend(wireApiKeySchema, {
  key: z.string().check(z.describe('the secret: shown here once, never again')),
});
/** Key lists are never paged (a handful of keys); `next_page` is always null. */
export const listOf = (item: z.ZodMiniType) => z.object({ data: z.array(item), next_page: z.null() });
