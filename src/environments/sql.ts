import { sql } from 'drizzle-orm';
import { ts } from '../db/time.js';

/** The `Environment` projection of `environments`, aliased to the TypeScript field names. */
export const ENVIRONMENT_COLUMNS = sql.raw(`id, kind, name, description, metadata, config,
  ${ts('archived_at')} AS "archivedAt", ${ts('created_at')} AS "createdAt", ${ts('updated_at')} AS "updatedAt"`);
