import { sql } from 'drizzle-orm';
import { maybeRow, type SqlHandle } from '../db/handle.js';
import { newId } from '../ids.js';
import type { EnvironmentConfig } from './config.js';
import { ENVIRONMENT_COLUMNS } from './sql.js';
import type { Environment } from './types.js';

export interface NewEnvironment {
  name: string;
  description: string | null;
  metadata: Record<string, string>;
  config: EnvironmentConfig;
}

/** Inserts an environment; its kind is the config's type, for life. */
export async function createEnvironment(db: SqlHandle, input: NewEnvironment): Promise<Environment> {
  const row = await maybeRow<Environment>(
    db,
    sql`INSERT INTO environments (id, kind, name, description, metadata, config)
        VALUES (${newId('env')}, ${input.config.type}, ${input.name}, ${input.description},
                ${JSON.stringify(input.metadata)}::jsonb, ${JSON.stringify(input.config)}::jsonb)
        RETURNING ${ENVIRONMENT_COLUMNS}`,
  );
  return row!;
}
