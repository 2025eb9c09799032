/**
 * Credentials: environment keys (one environment's workers) and API keys (`admin` for
 * management and everything else, `platform` for the platform lane). Both arrive the same
 * way — the official SDK sends API keys as `Authorization: Bearer` too — so a presented
 * secret is told apart by what its hash finds, not by its header or shape.
 *
 * Unknown, revoked and expired look identical to a caller: each is simply no credential.
 */
import { sql } from 'drizzle-orm';
import { maybeRow, rows, type SqlHandle } from '../db/handle.js';
import { type Timestamp, ts } from '../db/time.js';
import { newId } from '../ids.js';
import type { CredentialCache } from './credential-cache.js';
import type { ApiKeyScope, Principal } from './principal.js';
import { digestsEqual, hashSecret, mintSecret } from './secrets.js';

export type { ApiKeyScope, Principal } from './principal.js';

const LIVE = sql.raw('revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())');

/**
 * Who a presented secret belongs to, or null. One round trip over both key tables, none when
 * `cache` remembers the secret's digest.
 */
export async function resolveCredential(
  db: SqlHandle,
  secret: string,
  cache?: CredentialCache,
): Promise<Principal | null> {
  const hash = await hashSecret(secret);
  const remembered = cache?.get(hash);
  if (remembered) return remembered;
  const row = await maybeRow<{
    kind: 'environment' | 'api';
    id: string;
    environmentId: string | null;
    scope: ApiKeyScope | null;
    keyHash: string;
    msLeft: number | null;
  }>(
    db,
    sql`SELECT 'environment' AS kind, id, environment_id AS "environmentId", NULL AS scope, key_hash AS "keyHash",
               ${MS_LEFT} AS "msLeft"
          FROM environment_keys WHERE key_hash = ${hash} AND ${LIVE}
        UNION ALL
        SELECT 'api', id, NULL, scope, key_hash, ${MS_LEFT} FROM api_keys WHERE key_hash = ${hash} AND ${LIVE}
        LIMIT 1`,
  );
  if (!row || !digestsEqual(row.keyHash, hash)) return null;
  const principal: Principal =
    row.kind === 'environment'
      ? { kind: 'environment', environmentId: row.environmentId!, keyId: row.id }
      : { kind: 'api', scope: row.scope!, keyId: row.id };
  cache?.set(hash, principal, row.msLeft === null ? null : Number(row.msLeft));
  return principal;
}

/** A key's remaining life in milliseconds by the database's clock; NULL when it never expires. */
const MS_LEFT = sql.raw('(extract(epoch FROM expires_at - now()) * 1000)::float8');

export interface IssuedKey {
  id: string;
  name: string;
  /** The secret: shown once, here, and never again. */
  key: string;
  createdAt: Timestamp;
  expiresAt: Timestamp | null;
}

export interface KeyInfo {
  id: string;
  name: string;
  createdAt: Timestamp;
  expiresAt: Timestamp | null;
  revokedAt: Timestamp | null;
}

const KEY_COLUMNS = sql.raw(
  `id, name, ${ts('created_at')} AS "createdAt", ${ts('expires_at')} AS "expiresAt", ${ts('revoked_at')} AS "revokedAt"`,
);

/** Issues a key for the environment, optionally expiring after `ttlSeconds`. */
export async function issueEnvironmentKey(
  db: SqlHandle,
  environmentId: string,
  name: string,
  ttlSeconds: number | null,
): Promise<IssuedKey> {
  const key = mintSecret('env');
  const row = await maybeRow<KeyInfo>(
    db,
    sql`INSERT INTO environment_keys (id, environment_id, name, key_hash, expires_at)
        VALUES (${newId('envkey')}, ${environmentId}, ${name}, ${await hashSecret(key)},
                ${ttlSeconds === null ? null : sql`now() + ${ttlSeconds}::double precision * interval '1 second'`})
        RETURNING ${KEY_COLUMNS}`,
  );
  return { id: row!.id, name: row!.name, key, createdAt: row!.createdAt, expiresAt: row!.expiresAt };
}

/** The environment's keys that are not revoked (expired ones included), newest first. */
export async function listEnvironmentKeys(db: SqlHandle, environmentId: string): Promise<KeyInfo[]> {
  return rows<KeyInfo>(
    db,
    sql`SELECT ${KEY_COLUMNS} FROM environment_keys
         WHERE environment_id = ${environmentId} AND revoked_at IS NULL
         ORDER BY created_at DESC, id DESC`,
  );
}

/** Revokes a key of this environment; idempotent. False when no such key is the environment's. */
export async function revokeEnvironmentKey(
  db: SqlHandle,
  environmentId: string,
  keyId: string,
): Promise<boolean> {
  const row = await maybeRow(
    db,
    sql`UPDATE environment_keys SET revoked_at = coalesce(revoked_at, now())
         WHERE id = ${keyId} AND environment_id = ${environmentId} RETURNING 1 AS ok`,
  );
  return row !== null;
}

export interface ApiKeyInfo extends KeyInfo {
  scope: ApiKeyScope;
}

export async function issueApiKey(
  db: SqlHandle,
  name: string,
  scope: ApiKeyScope,
  ttlSeconds: number | null,
): Promise<IssuedKey & { scope: ApiKeyScope }> {
  const key = mintSecret('api');
  const row = await maybeRow<KeyInfo>(
    db,
    sql`INSERT INTO api_keys (id, name, scope, key_hash, expires_at)
        VALUES (${newId('apikey')}, ${name}, ${scope}, ${await hashSecret(key)},
                ${ttlSeconds === null ? null : sql`now() + ${ttlSeconds}::double precision * interval '1 second'`})
        RETURNING ${KEY_COLUMNS}`,
  );
  return { id: row!.id, name: row!.name, scope, key, createdAt: row!.createdAt, expiresAt: row!.expiresAt };
}

export async function listApiKeys(db: SqlHandle): Promise<ApiKeyInfo[]> {
  return rows<ApiKeyInfo>(
    db,
    sql`SELECT ${KEY_COLUMNS}, scope FROM api_keys WHERE revoked_at IS NULL ORDER BY created_at DESC, id DESC`,
  );
}

export async function revokeApiKey(db: SqlHandle, keyId: string): Promise<boolean> {
  const row = await maybeRow(
    db,
    sql`UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = ${keyId} RETURNING 1 AS ok`,
  );
  return row !== null;
}

/**
 * Makes `secret` (from LEASEHOLD_ADMIN_KEY) a live admin key and revokes the keys earlier
 * values of the setting created, so changing the setting rotates the key. Run at start on
 * Node, and once per isolate on Workers (`configured-admin-key.ts`).
 *
 * A rotation is not instant everywhere: replicas not yet restarted and Worker isolates of the
 * previous version still hold the old value, and start (or restart) with it for a while. So
 * only a newer value retires an older one: a value some later value has replaced stays
 * revoked when it is ensured again, and retires nothing. Otherwise each start would take the
 * key back from the other side and the admin key would flip between the two values for as
 * long as both are deployed. The cost: a replaced value never comes back, so a rollback
 * configures a fresh value. The newest value revoked through the API does come back live
 * (that is how an operator who revoked every admin key gets one back).
 *
 * Resolves to whether the key is live: false for a value a newer one has replaced.
 */
export async function ensureConfiguredAdminKey(db: SqlHandle, secret: string): Promise<boolean> {
  const hash = await hashSecret(secret);
  const row = await maybeRow<{ live: boolean }>(
    db,
    sql`WITH mine AS (
      INSERT INTO api_keys (id, name, scope, key_hash, source)
      VALUES (${newId('apikey')}, 'configured admin key', 'admin', ${hash}, 'config')
      ON CONFLICT (key_hash) DO UPDATE
         SET revoked_at = CASE WHEN EXISTS (SELECT 1 FROM api_keys newer
                                             WHERE newer.source = 'config'
                                               AND newer.created_at > api_keys.created_at)
                               THEN api_keys.revoked_at END,
             scope = 'admin', source = 'config'
      RETURNING created_at, revoked_at
    ), retired AS (
      UPDATE api_keys SET revoked_at = now()
       WHERE source = 'config' AND key_hash <> ${hash} AND revoked_at IS NULL
         AND created_at < (SELECT created_at FROM mine)
    )
    SELECT revoked_at IS NULL AS live FROM mine`,
  );
  return row!.live;
}

/** True when at least one live admin key exists (the embedded default creates one if not). */
export async function hasAdminKey(db: SqlHandle): Promise<boolean> {
  return (
    (await maybeRow(db, sql`SELECT 1 AS ok FROM api_keys WHERE scope = 'admin' AND ${LIVE} LIMIT 1`)) !== null
  );
}
