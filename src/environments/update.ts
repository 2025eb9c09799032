import { sql } from 'drizzle-orm';
import { type Database, maybeRow, type SqlHandle } from '../db/handle.js';
import { type ConfigParams, type EnvironmentConfig, resolveConfig } from './config.js';
import { applyMetadataPatch, MAX_METADATA_PAIRS, type MetadataPatch } from './metadata.js';
import { ENVIRONMENT_COLUMNS } from './sql.js';
import type { Environment } from './types.js';

/** An update: omitted fields keep their value; `description: null` clears it. */
export interface EnvironmentPatch {
  name?: string;
  description?: string | null;
  metadata?: MetadataPatch;
  config?: ConfigParams;
}

export type UpdateOutcome =
  | { ok: true; environment: Environment }
  | { ok: false; reason: 'not_found' | 'archived' | 'config_type_change' | 'too_many_metadata_keys' };

/**
 * Applies a patch under the row lock, so two concurrent patches (say, to different metadata
 * keys) both land instead of one overwriting the other. Refuses an archived environment, a
 * change of `config.type` (the kind is immutable) and a patch that would leave more than
 * `MAX_METADATA_PAIRS` keys; refusals write nothing.
 */
export async function updateEnvironment(
  db: Database,
  id: string,
  patch: EnvironmentPatch,
): Promise<UpdateOutcome> {
  return db.transaction(async (tx): Promise<UpdateOutcome> => {
    const current = await lockEnvironment(tx, id);
    if (!current) return { ok: false, reason: 'not_found' };
    if (current.archivedAt !== null) return { ok: false, reason: 'archived' };
    if (patch.config && patch.config.type !== current.kind)
      return { ok: false, reason: 'config_type_change' };
    const metadata = applyMetadataPatch(current.metadata, patch.metadata);
    if (Object.keys(metadata).length > MAX_METADATA_PAIRS)
      return { ok: false, reason: 'too_many_metadata_keys' };
    const environment = await writeEnvironment(tx, id, {
      name: patch.name ?? current.name,
      description: patch.description === undefined ? current.description : patch.description,
      metadata,
      config: resolveConfig(patch.config, current.config),
    });
    return { ok: true, environment };
  });
}

/** The environment, locked against concurrent updates until the transaction ends; or null. */
async function lockEnvironment(tx: SqlHandle, id: string): Promise<Environment | null> {
  return maybeRow<Environment>(
    tx,
    sql`SELECT ${ENVIRONMENT_COLUMNS} FROM environments WHERE id = ${id} FOR UPDATE`,
  );
}

async function writeEnvironment(
  tx: SqlHandle,
  id: string,
  fields: Pick<Environment, 'name' | 'description' | 'metadata'> & { config: EnvironmentConfig },
): Promise<Environment> {
  const row = await maybeRow<Environment>(
    tx,
    sql`UPDATE environments
           SET name = ${fields.name}, description = ${fields.description},
               metadata = ${JSON.stringify(fields.metadata)}::jsonb, config = ${JSON.stringify(fields.config)}::jsonb,
               updated_at = now()
         WHERE id = ${id}
     RETURNING ${ENVIRONMENT_COLUMNS}`,
  );
  return row!;
}
